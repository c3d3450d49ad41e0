package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rotated is a log in a fresh data dir, anchored unless noAnchor, that
// rotates at maxSize bytes keeping keep segments.
type rotated struct {
	path   string
	anchor *Anchor
}

func newRotated(t *testing.T, anchored bool) *rotated {
	t.Helper()
	root := t.TempDir()
	data := filepath.Join(root, "data")
	must(t, os.MkdirAll(data, 0o700))
	r := &rotated{path: filepath.Join(data, FileName)}
	if anchored {
		a, err := OpenAnchor(filepath.Join(root, "anchor"), data)
		must(t, err)
		r.anchor = a
	}
	return r
}

// open opens the log as the daemon does: anchor, then rotation.
func (r *rotated) open(t *testing.T, maxSize int64, keep int) *Log {
	t.Helper()
	l, err := Open(r.path)
	must(t, err)
	if r.anchor != nil {
		must(t, l.SetAnchor(r.anchor))
	}
	l.SetRotation(maxSize, keep)
	return l
}

// write appends n records (sandbox sbx-a for odd seqs, sbx-b for even),
// checkpointing every `every` (0: never) and closes the log.
func (r *rotated) write(t *testing.T, maxSize int64, keep, n, every int) {
	t.Helper()
	l := r.open(t, maxSize, keep)
	for i := 1; i <= n; i++ {
		sb := "sbx-b"
		if (l.seq+1)%2 == 1 {
			sb = "sbx-a"
		}
		must(t, l.Append("api", sb, "k", map[string]string{"i": fmt.Sprint(i)}))
		if every > 0 && i%every == 0 {
			must(t, l.Checkpoint())
		}
	}
	must(t, l.Close())
}

func (r *rotated) verify(t *testing.T) (Head, error) {
	t.Helper()
	if r.anchor == nil {
		return VerifyAnchored(r.path, nil)
	}
	return verifyWith(t, r.path, r.anchor)
}

func (r *rotated) segments(t *testing.T) []segment {
	t.Helper()
	segs, err := segmentsOf(r.path)
	must(t, err)
	return segs
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	must(t, err)
	return st.Size()
}

// TestRotateAtSize: the active file becomes a segment once it reaches the
// size (not before: each segment but its last record is under it), keep
// bounds the segments, and the whole log verifies from its new start.
func TestRotateAtSize(t *testing.T) {
	cases := []struct {
		name          string
		maxSize       int64
		keep, n       int
		wantSegs      int  // -1: some
		wantFirstPast bool // records rotated away
	}{
		{"never (0)", 0, 10, 200, 0, false},
		{"keep all", 4096, 0, 200, -1, false},
		{"keep 3", 4096, 3, 200, 3, true},
		{"keep 1, every record", 1, 1, 20, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRotated(t, true)
			r.write(t, tc.maxSize, tc.keep, tc.n, 50)
			segs := r.segments(t)
			if (tc.wantSegs >= 0 && len(segs) != tc.wantSegs) || (tc.wantSegs < 0 && len(segs) < 2) {
				t.Fatalf("%d segments, want %d", len(segs), tc.wantSegs)
			}
			for _, s := range segs {
				if sz := size(t, s.path); sz < tc.maxSize || sz > tc.maxSize+400 {
					t.Errorf("segment %s: %d bytes, rotated at %d", filepath.Base(s.path), sz, tc.maxSize)
				}
			}
			h, err := r.verify(t)
			if err != nil || h.Records != uint64(tc.n) || h.Segments != len(segs) || (h.First > 1) != tc.wantFirstPast {
				t.Fatalf("verify: %+v %v", h, err)
			}
			if len(segs) > 0 && h.First != segs[0].first {
				t.Fatalf("chain starts at %d, oldest segment at %d", h.First, segs[0].first)
			}
		})
	}
}

// TestVerifyAcrossSegments: with and without checkpoints a rotated log
// verifies; checkpoints of deleted segments are counted as rotated away,
// the ones in kept segments are checked.
func TestVerifyAcrossSegments(t *testing.T) {
	for _, anchored := range []bool{false, true} {
		t.Run(fmt.Sprint("anchored=", anchored), func(t *testing.T) {
			r := newRotated(t, anchored)
			r.write(t, 2048, 2, 150, 10)
			r.write(t, 2048, 2, 50, 10) // a restart: the chain goes on across it
			h, err := r.verify(t)
			if err != nil || h.Records != 200 || h.First <= 1 || h.Kept() != 200-h.First+1 {
				t.Fatalf("%+v %v", h, err)
			}
			if anchored && (h.RotatedAway == 0 || h.Anchored == nil || h.Anchored.Seq != 200) {
				t.Fatalf("anchored: %+v", h)
			}
			if !anchored && h.Anchored != nil {
				t.Fatalf("unanchored: %+v", h)
			}
			if _, err := VerifyDir(filepath.Dir(r.path), "unused", true); err != nil {
				t.Fatalf("VerifyDir --unanchored: %v", err)
			}
		})
	}
}

// TestRotatedLogTamperDetected: rotation gives tampering no place to hide.
func TestRotatedLogTamperDetected(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, r *rotated, segs []segment)
		kind   string
		msg    string
	}{
		{"record edited in the oldest kept segment", func(t *testing.T, _ *rotated, segs []segment) {
			editLine(t, segs[0].path, 2)
		}, Edited, "hash mismatch"},
		{"middle segment deleted", func(t *testing.T, _ *rotated, segs []segment) {
			must(t, os.Remove(segs[1].path))
		}, Edited, "a segment deleted"},
		{"oldest kept segment deleted", func(t *testing.T, _ *rotated, segs []segment) {
			must(t, os.Remove(segs[0].path))
		}, Truncated, "deleted, not rotated away"},
		{"every segment deleted", func(t *testing.T, _ *rotated, segs []segment) {
			for _, s := range segs {
				must(t, os.Remove(s.path))
			}
		}, Edited, "no rotated segment holds the records before it"},
		{"segment renamed", func(t *testing.T, r *rotated, segs []segment) {
			must(t, os.Rename(segs[1].path, segmentPath(r.path, segs[1].first+1)))
		}, Edited, "renamed or edited"},
		{"newest segment and active file deleted", func(t *testing.T, r *rotated, segs []segment) {
			must(t, os.Remove(segs[3].path))
			must(t, os.Remove(r.path))
		}, Truncated, "newest"},
		{"active file deleted", func(t *testing.T, r *rotated, _ []segment) {
			must(t, os.Remove(r.path))
		}, Truncated, "newest"},
		{"replaced by another rotated log", func(t *testing.T, r *rotated, segs []segment) {
			o := newRotated(t, false)
			o.write(t, 2048, 4, 130, 0)
			for _, s := range segs {
				must(t, os.Remove(s.path))
			}
			must(t, os.Remove(r.path))
			for _, s := range append(o.segments(t), segment{path: o.path}) {
				must(t, os.Rename(s.path, filepath.Join(filepath.Dir(r.path), filepath.Base(s.path))))
			}
		}, Replaced, "rewritten or replaced"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRotated(t, true)
			r.write(t, 2048, 4, 120, 10) // deletes some segments
			r.write(t, 2048, 4, 10, 0)
			segs := r.segments(t)
			if len(segs) != 4 || segs[0].first == 1 {
				t.Fatalf("setup: %d segments from %d", len(segs), segs[0].first)
			}
			tc.tamper(t, r, segs)
			_, err := r.verify(t)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Kind != tc.kind || !strings.Contains(ve.Msg, tc.msg) {
				t.Fatalf("got %v, want kind %q with %q", err, tc.kind, tc.msg)
			}
			l, err := Open(r.path)
			if err == nil {
				err = l.SetAnchor(r.anchor)
				_ = l.Close()
			}
			if err == nil {
				t.Fatal("a tampered log was accepted for appending")
			}
		})
	}
}

// editLine changes a field of the record on line n (1-based) of path.
func editLine(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines[n-1] = strings.Replace(lines[n-1], `"actor":"k"`, `"actor":"K"`, 1)
	must(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
}

// TestRotationStreamsEveryRecord: the Line hook (the syslog stream) gets
// every record once, rotations or not.
func TestRotationStreamsEveryRecord(t *testing.T) {
	r := newRotated(t, true)
	l := r.open(t, 1024, 2)
	var seqs []string
	l.SetHooks(Hooks{Line: func(line []byte) {
		seqs = append(seqs, strings.SplitN(string(line), ",", 2)[0])
	}})
	for range 100 {
		must(t, l.Append("api", "", "k", nil))
	}
	must(t, l.Close())
	if len(r.segments(t)) != 2 || len(seqs) != 100 || seqs[0] != `{"seq":1` || seqs[99] != `{"seq":100` {
		t.Fatalf("%d lines streamed (%v … %v)", len(seqs), seqs[0], seqs[len(seqs)-1])
	}
}
