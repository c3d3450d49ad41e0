package builder

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestBuildLogsCountedAndCollected: a team's build logs count against its
// disk (LogBytes) and GC removes the log of a build whose record is gone
// (its template deleted), never one whose record exists, of a kept build
// or of one that began after GC listed the builds. Before, no log was ever
// removed or counted.
func TestBuildLogsCountedAndCollected(t *testing.T) {
	s := gcService(t)
	ctx := context.Background()
	now := time.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(errors.Join(s.st.PutTemplate(ctx, &store.TemplateRec{ID: "t1", Names: []string{"one"}, CreatedAt: now}),
		s.st.PutBuild(ctx, &store.BuildRec{ID: "b1", TemplateID: "t1", Status: "error", CreatedAt: now}),
		s.st.PutBuild(ctx, &store.BuildRec{ID: "b2", TemplateID: "t2", Status: "error", CreatedAt: now}),
		os.MkdirAll(s.logDir(), 0o700)))
	for id, n := range map[string]int{"b1": 3000, "b2": 500, "gone": 100} {
		must(os.WriteFile(s.logPath(id), make([]byte, n), 0o600))
	}
	n, err := s.LogBytes(ctx, func(id string) (bool, error) { return id == "t1", nil })
	if err != nil || n != 3000 {
		t.Fatalf("t1's log bytes: %d %v, want 3000", n, err)
	}
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"b1": true, "b2": true, "gone": false} {
		if _, err := os.Stat(s.logPath(id)); (err == nil) != want {
			t.Fatalf("after GC, log of %s present %v, want %v", id, err == nil, want)
		}
	}
	// The template goes: its build's record with it, then its log.
	must(s.Delete(ctx, "one"))
	s.wg.Wait() // the GC the delete started
	if _, err := s.st.Build(ctx, "b1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("b1's record after its template's delete and GC: %v", err)
	}
	if _, err := os.Stat(s.logPath("b1")); err == nil {
		t.Fatal("b1's log outlived its record")
	}
}

// TestBuildRecordsCounted: a build's record holds its spec (up to the API's
// 1 MiB body) and reason in the shared database for as long as its
// template lives: LogBytes counts them for the team that owns the template,
// not for another. Before, a team's fast-failing builds of a 900 KB
// fromImage grew the node's database by about 1 MB each (10 in 13 s on a
// daemon, by hand) and counted against no quota.
func TestBuildRecordsCounted(t *testing.T) {
	s := gcService(t)
	ctx := context.Background()
	now := time.Now()
	spec, _ := json.Marshal(map[string]string{"fromImage": strings.Repeat("a", 900<<10)})
	if err := errors.Join(s.st.PutTemplate(ctx, &store.TemplateRec{ID: "t1", Names: []string{"one"}, CreatedAt: now}),
		s.st.PutBuild(ctx, &store.BuildRec{ID: "b1", TemplateID: "t1", Status: "error", Spec: spec,
			Reason: strings.Repeat("r", 1000), CreatedAt: now})); err != nil {
		t.Fatal(err)
	}
	for team, want := range map[string]int64{"t1": int64(len(spec)) + 1000, "t2": 0} {
		n, err := s.LogBytes(ctx, func(id string) (bool, error) { return id == team, nil })
		if err != nil || n != want {
			t.Errorf("owner of %s: %d bytes (%v), want %d", team, n, err, want)
		}
	}
}
