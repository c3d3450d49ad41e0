package dist

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Push uploads build m's layers (all present in the layer store) and its
// description; blobs the registry already has are not sent again. It
// returns the manifest digest.
func (r *Remote) Push(ctx context.Context, m Meta) (string, error) {
	ref, err := r.Ref(m.TemplateID, m.BuildID)
	if err != nil {
		return "", err
	}
	img, ls, err := r.image(m, true)
	if err == nil {
		err = remote.Write(ref, img, r.options(ctx)...)
		if err != nil && ctx.Err() == nil { // a recorded digest may be stale: once more, computed
			r.dropDescs(m.Layers)
			if img, ls, err = r.image(m, false); err == nil {
				err = remote.Write(ref, img, r.options(ctx)...)
			}
		}
	}
	if err != nil {
		return "", fmt.Errorf("push template %s build %s to %s: %w", m.TemplateID, m.BuildID, r.Repo, err)
	}
	for i, id := range m.Layers {
		r.saveDesc(id, ls[i])
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// image is the OCI image of build m and its layers; cached uses the
// layers' recorded digests where there are some.
func (r *Remote) image(m Meta, cached bool) (v1.Image, []v1.Layer, error) {
	if len(m.Layers) == 0 {
		return nil, nil, fmt.Errorf("no layers")
	}
	adds := make([]mutate.Addendum, 0, len(m.Layers))
	ls := make([]v1.Layer, 0, len(m.Layers))
	for _, id := range m.Layers {
		l, err := r.layer(id, cached)
		if err != nil {
			return nil, nil, err
		}
		ls = append(ls, l)
		adds = append(adds, mutate.Addendum{Layer: l, Annotations: map[string]string{AnnLayer: id}, MediaType: types.OCILayer})
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, nil, err
	}
	img, err = r.configure(img, m)
	return img, ls, err
}

// layer is the OCI layer of layer id.
func (r *Remote) layer(id string, cached bool) (v1.Layer, error) {
	if !r.Layers.Has(id) {
		return nil, fmt.Errorf("layer %s is not in the layer store", id)
	}
	if l := r.cachedLayer(id); cached && l != nil {
		return l, nil
	}
	return treeLayer(r.Layers.Path(id))
}

// configure puts m's description into img's config labels and manifest
// annotations.
func (r *Remote) configure(img v1.Image, m Meta) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	ls, _ := json.Marshal(m.Layers)
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Labels = map[string]string{LabelTemplate: m.TemplateID, LabelBuild: m.BuildID,
		LabelName: m.Name, LabelLayers: string(ls), LabelConfig: string(m.Config)}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, map[string]string{LabelTemplate: m.TemplateID, LabelBuild: m.BuildID,
		LabelLayers: string(ls)}).(v1.Image), nil
}

// treeLayer is a gzip (fastest level: pushes are CPU-bound) layer of the
// tree under root, tarred again on each read.
func treeLayer(root string) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(WriteTree(pw, root)) }()
		return pr, nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithMediaType(types.OCILayer))
}
