package builder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestLayerSizesRecorded: a ready build's record holds its layers' sizes,
// and LayerBytes counts them where the layers are not (another node of a
// cluster, which shares the record but not the layer store). Before, such
// a node counted them as nothing: a team's templates built on one node
// were free on every other, and it held its quota's worth on each.
func TestLayerSizesRecorded(t *testing.T) {
	s := gcService(t)
	ctx := context.Background()
	l := s.testLayer(t, hashKey("mine"))
	size := s.reg.Layers.Size(l)
	b := &store.BuildRec{ID: "b1", TemplateID: "t1", Status: "building", CreatedAt: time.Now()}
	if err := s.st.PutTemplate(ctx, &store.TemplateRec{ID: "t1", Names: []string{"one"}, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	lg, err := openLog(s.logDir(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.close()
	s.finish(b, &state{layers: []string{l}}, nil, lg)
	rec, err := s.st.Build(ctx, b.ID)
	if err != nil || rec.Status != "ready" || !slices.Equal(rec.LayerSizes, []int64{size}) || size == 0 {
		t.Fatalf("ready build's record: %+v %v, want layer sizes [%d]", rec, err, size)
	}
	if err := os.RemoveAll(filepath.Join(s.reg.Layers.Dir, l)); err != nil { // as another node sees it
		t.Fatal(err)
	}
	owned := func(id string) (bool, error) { return id == "t1", nil }
	if n, err := s.LayerBytes(ctx, owned, nil); err != nil || n != size {
		t.Fatalf("layer bytes without the layer here: %d, %v; want the recorded %d", n, err, size)
	}
}

// TestUserNSCopyCharged: a layer's user-namespace copy (fs-userns, a full
// copy made for crun and runc) counts for the team whose template holds
// the layer and in the node's template usage. Before, it counted nowhere:
// every template run on crun or runc held twice what was charged.
func TestUserNSCopyCharged(t *testing.T) {
	s := gcService(t)
	ctx := context.Background()
	s.reg.Layers.Shift = func(_ context.Context, _, dst string) error { return os.Mkdir(dst, 0o755) }
	l := s.testLayer(t, hashKey("shifted"))
	size := s.reg.Layers.Size(l)
	if err := errors.Join(s.st.PutTemplate(ctx, &store.TemplateRec{ID: "t1", Names: []string{"one"}, CreatedAt: time.Now()}),
		s.st.PutBuild(ctx, &store.BuildRec{ID: "b1", TemplateID: "t1", Status: "ready", Layers: []string{l}, CreatedAt: time.Now()})); err != nil {
		t.Fatal(err)
	}
	owned := func(id string) (bool, error) { return id == "t1", nil }
	before, _ := s.LayerBytes(ctx, owned, nil)
	usage := s.Usage()
	if _, err := s.reg.Layers.EnsureUserNS(ctx, l); err != nil {
		t.Fatal(err)
	}
	if n, err := s.LayerBytes(ctx, owned, nil); err != nil || before != size || n != 2*size {
		t.Fatalf("team's layer bytes %d before the copy, %d (%v) after; want %d, %d", before, n, err, size, 2*size)
	}
	if u := s.Usage(); u != usage+size {
		t.Fatalf("template usage %d after the copy, want %d", u, usage+size)
	}
}
