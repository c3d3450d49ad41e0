package builder

import (
	"context"
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
