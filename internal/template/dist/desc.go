package dist

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// descFile, beside a layer's tree in the layer store, remembers the
// layer's OCI digests from its last push or pull, so that pushing a stack
// whose lower layers the registry already holds (every build on a
// built-in) costs a HEAD per layer instead of tarring and compressing it
// twice to learn its digest.
const descFile = "oci.json"

type desc struct {
	Digest string `json:"digest"`
	DiffID string `json:"diffID"`
	Size   int64  `json:"size"`
}

func (r *Remote) descPath(id string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(r.Layers.Path(id))), descFile) // <id>/r/fs → <id>/oci.json
}

// saveDesc records l's digests for layer id (best effort: it only saves work).
func (r *Remote) saveDesc(id string, l v1.Layer) {
	d, err1 := l.Digest()
	diff, err2 := l.DiffID()
	size, err3 := l.Size()
	if errors.Join(err1, err2, err3) != nil {
		return
	}
	b, _ := json.Marshal(desc{Digest: d.String(), DiffID: diff.String(), Size: size})
	tmp := r.descPath(id) + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		_ = os.Rename(tmp, r.descPath(id))
	}
}

// cachedLayer is layer id with its recorded digests, or nil if none.
func (r *Remote) cachedLayer(id string) v1.Layer {
	b, err := os.ReadFile(r.descPath(id))
	var d desc
	if err != nil || json.Unmarshal(b, &d) != nil {
		return nil
	}
	dg, err1 := v1.NewHash(d.Digest)
	diff, err2 := v1.NewHash(d.DiffID)
	if err1 != nil || err2 != nil || d.Size <= 0 {
		return nil
	}
	return &treeLayerCached{root: r.Layers.Path(id), digest: dg, diff: diff, size: d.Size}
}

// dropDescs forgets the recorded digests of ids.
func (r *Remote) dropDescs(ids []string) {
	for _, id := range ids {
		_ = os.Remove(r.descPath(id))
	}
}

// treeLayerCached is a layer tree with known digests; its content is made
// on read exactly as treeLayer makes it (gzip level 1 of WriteTree), so
// an upload the registry needs still matches the digest (else the
// registry refuses it and Push retries without the cache).
type treeLayerCached struct {
	root         string
	digest, diff v1.Hash
	size         int64
}

func (l *treeLayerCached) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *treeLayerCached) DiffID() (v1.Hash, error)            { return l.diff, nil }
func (l *treeLayerCached) Size() (int64, error)                { return l.size, nil }
func (l *treeLayerCached) MediaType() (types.MediaType, error) { return types.OCILayer, nil }

func (l *treeLayerCached) Uncompressed() (io.ReadCloser, error) { return tarPipe(l.root), nil }

func (l *treeLayerCached) Compressed() (io.ReadCloser, error) {
	src := tarPipe(l.root)
	pr, pw := io.Pipe()
	go func() {
		gw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		_, err := io.Copy(gw, src)
		err = errors.Join(err, gw.Close())
		src.Close()
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// tarPipe streams WriteTree(root).
func tarPipe(root string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(WriteTree(pw, root)) }()
	return pr
}
