package audit

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

func TestThin(t *testing.T) {
	defer func(k int) { keepRecent = k }(keepRecent)
	keepRecent = 2
	h := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	cp := func(seq uint64, at time.Duration, final bool) Checkpoint {
		return Checkpoint{Seq: seq, Time: h.Add(at), Final: final, First: 3}
	}
	cps := []Checkpoint{
		cp(1, 0, false),                     // rotated away (seq < First 3)
		cp(2, time.Hour, true),              // rotated away, final or not
		cp(3, time.Hour, false),             // not the last of its hour
		cp(4, time.Hour+time.Minute, false), // the last of 11:00
		cp(5, 2*time.Hour, true),            // final
		cp(6, 2*time.Hour, false),           // not the last of 12:00 (7 is)
		cp(7, 2*time.Hour+time.Second, false),
		cp(8, 3*time.Hour, false), // recent
		cp(9, 3*time.Hour, false), // recent
	}
	want := []bool{false, false, false, true, true, false, true, true, true}
	got := thin(cps)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("checkpoint seq %d: kept %v, want %v", cps[i].Seq, got[i], want[i])
		}
	}
}

// TestCheckpointFileCompacted: past compactAt checkpoints the file shrinks
// to what thin keeps; the log still verifies against it, across a restart,
// and a log cut short or rolled back is still refused.
func TestCheckpointFileCompacted(t *testing.T) {
	defer func(k, c int) { keepRecent, compactAt = k, c }(keepRecent, compactAt)
	keepRecent, compactAt = 20, 40
	path, a := anchored(t, 300, 5) // 60 checkpoints and the start's and stop's
	cps, err := ReadCheckpoints(a.Path(), a.Public())
	if err != nil {
		t.Fatal(err)
	}
	// one hour, no final but the last: the recent ones plus the last of the hour
	if len(cps) < keepRecent || len(cps) >= compactAt {
		t.Fatalf("%d checkpoints in the file, want compacted to about %d", len(cps), keepRecent)
	}
	if _, err := os.Stat(a.Path() + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
	if h, err := verifyWith(t, path, a); err != nil || h.Anchored == nil || h.Anchored.Seq != 300 {
		t.Fatalf("verify after compaction: %+v %v", h, err)
	}
	appendN(t, path, a, 100, 2) // a restart: SetAnchor reads the compacted file
	if _, err := verifyWith(t, path, a); err != nil {
		t.Fatalf("verify after a restart: %v", err)
	}
	saved, _ := os.ReadFile(path)
	keepLines(t, path, 350) // cut short
	if _, err := verifyWith(t, path, a); err == nil {
		t.Fatal("a log cut short verified against the compacted checkpoints")
	}
	os.WriteFile(path, saved, 0o600)
	appendN(t, path, a, 10, 0)
	b := bytes.Clone(saved) // roll back to the copy before those 10
	os.WriteFile(path, b, 0o600)
	if _, err := verifyWith(t, path, a); err == nil {
		t.Fatal("a rolled-back log verified against the compacted checkpoints")
	}
}
