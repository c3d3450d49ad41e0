package builder

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestReloadLastWins: Reloads that run at once, each after its own write
// (as every build's status change is followed by one), leave the index with
// every write. Before, a Reload that read the store before another's write
// could install its index after that one's, and a ready build answered
// "building" (its template's latest unchanged) until some later Reload.
func TestReloadLastWins(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if err := st.PutTemplate(ctx, &store.TemplateRec{ID: "t1", Names: []string{"a"}, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	r := &Registry{Store: st}
	const builds = 4
	for round := range 40 {
		var wg sync.WaitGroup
		for i := range builds {
			wg.Go(func() {
				b := &store.BuildRec{ID: fmt.Sprint("b", i), TemplateID: "t1", Status: fmt.Sprint(round), CreatedAt: now}
				if err := st.PutBuild(ctx, b); err != nil {
					t.Error(err)
				}
				if err := r.Reload(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for i := range builds {
			if b, ok := r.build(fmt.Sprint("b", i)); !ok || b.Status != fmt.Sprint(round) {
				t.Fatalf("round %d: the index holds build b%d as %+v after its write and Reload", round, i, b)
			}
		}
	}
}
