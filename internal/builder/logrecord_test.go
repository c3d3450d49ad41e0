package builder

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestBuildLogSizeRecorded: a build's end records its log's size in its
// record, and LogBytes counts that size where the log file is not (another
// node of a cluster, which shares the record but not the file). Before, a
// node stat'ed its own log files only: on a cluster a team's builds on one
// node left their logs uncounted by every other node.
func TestBuildLogSizeRecorded(t *testing.T) {
	s := gcService(t)
	ctx := context.Background()
	now := time.Now()
	b := &store.BuildRec{ID: "b1", TemplateID: "t1", Status: "building", CreatedAt: now}
	if err := errors.Join(s.st.PutTemplate(ctx, &store.TemplateRec{ID: "t1", Names: []string{"one"}, CreatedAt: now}),
		s.st.PutBuild(ctx, b)); err != nil {
		t.Fatal(err)
	}
	lg, err := openLog(s.logDir(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		lg.add("info", "1", "a line of output %064d", 7)
	}
	s.finish(b, nil, errors.New("step failed"), lg)
	lg.close()
	fi, err := os.Stat(s.logPath(b.ID))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.st.Build(ctx, b.ID)
	if err != nil || rec.LogBytes != fi.Size() {
		t.Fatalf("recorded log size %d (%v), want the file's %d", rec.LogBytes, err, fi.Size())
	}
	owned := func(id string) (bool, error) { return id == "t1", nil }
	here, err := s.LogBytes(ctx, owned)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.logPath(b.ID)); err != nil { // as another node sees it: the record, no file
		t.Fatal(err)
	}
	there, err := s.LogBytes(ctx, owned)
	if err != nil || there != here || there < fi.Size() {
		t.Fatalf("log bytes without the file %d (%v), with it %d: want equal, at least the log's %d", there, err, here, fi.Size())
	}
}
