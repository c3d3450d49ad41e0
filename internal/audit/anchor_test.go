package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// anchored writes n records to a fresh anchored log, checkpointing every
// `every` records, and returns the log path and anchor.
func anchored(t *testing.T, n, every int) (string, *Anchor) {
	t.Helper()
	root := t.TempDir()
	data := filepath.Join(root, "data")
	a, err := OpenAnchor(filepath.Join(root, "anchor"), data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(data, FileName)
	appendN(t, path, a, n, every)
	return path, a
}

// appendN opens the log at path anchored by a and appends n records.
func appendN(t *testing.T, path string, a *Anchor, n, every int) {
	t.Helper()
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetAnchor(a); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := l.Append("api", "", "k", map[string]string{"i": string(rune('a' + i%26))}); err != nil {
			t.Fatal(err)
		}
		if every > 0 && i%every == 0 {
			if err := l.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func verifyWith(t *testing.T, path string, a *Anchor) (Head, error) {
	t.Helper()
	cps, err := ReadCheckpoints(a.Path(), a.Public())
	if err != nil {
		t.Fatal(err)
	}
	return VerifyAnchored(path, cps)
}

func keepLines(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(lines[:n], nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAnchorIntactVerifies(t *testing.T) {
	path, a := anchored(t, 500, 100)
	h, err := verifyWith(t, path, a)
	if err != nil {
		t.Fatal(err)
	}
	if h.Records != 500 || h.Anchored == nil || h.Anchored.Seq != 500 {
		t.Fatalf("head %+v", h)
	}
}

func TestAnchorDetects(t *testing.T) {
	other, _ := anchored(t, 50, 0)
	cases := []struct {
		name   string
		tamper func(t *testing.T, path string, a *Anchor)
		kind   string
	}{
		// The issue's case: the newest records cut off (here 27 of 627).
		{"truncated", func(t *testing.T, path string, _ *Anchor) { keepLines(t, path, 600) }, Truncated},
		{"emptied", func(t *testing.T, path string, _ *Anchor) { keepLines(t, path, 0) }, Truncated},
		{"deleted", func(t *testing.T, path string, _ *Anchor) { _ = os.Remove(path) }, Truncated},
		// An older copy of the whole log (taken at a clean stop) restored.
		{"rolled back", func(t *testing.T, path string, _ *Anchor) { keepLines(t, path, 500) }, RolledBack},
		{"rolled back and extended", func(t *testing.T, path string, a *Anchor) {
			keepLines(t, path, 450)
			l, err := Open(path) // a daemon without the anchor extends it
			if err != nil {
				t.Fatal(err)
			}
			for range 100 {
				_ = l.Append("api", "", "k", nil)
			}
			_ = l.Close()
		}, RolledBack},
		{"replaced", func(t *testing.T, path string, _ *Anchor) {
			b, _ := os.ReadFile(other)
			_ = os.WriteFile(path, b, 0o600)
		}, Replaced},
		{"edited", func(t *testing.T, path string, _ *Anchor) {
			b, _ := os.ReadFile(path)
			_ = os.WriteFile(path, bytes.Replace(b, []byte(`"i":"c"`), []byte(`"i":"C"`), 1), 0o600)
		}, Edited},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, a := anchored(t, 500, 100)
			appendN(t, path, a, 127, 0) // a second run: 627 records, last checkpoint at close
			tc.tamper(t, path, a)
			_, err := verifyWith(t, path, a)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Kind != tc.kind {
				t.Fatalf("got %v, want kind %q", err, tc.kind)
			}
			// The daemon refuses to extend it too (except an in-log edit,
			// which Open already refuses).
			l, err := Open(path)
			if err == nil {
				err = l.SetAnchor(a)
				_ = l.Close()
			}
			if err == nil {
				t.Fatal("a tampered log was accepted for appending")
			}
		})
	}
}

func TestCheckpointFileForgeryDetected(t *testing.T) {
	path, a := anchored(t, 10, 0)
	b, _ := os.ReadFile(a.Path())
	forged := strings.Replace(string(b), `"seq":10`, `"seq":5`, 1)
	if err := os.WriteFile(a.Path(), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCheckpoints(a.Path(), a.Public()); err == nil || !strings.Contains(err.Error(), "bad signature") {
		t.Fatalf("forged checkpoint: %v", err)
	}
	_ = path
}

func TestUnanchoredLogGetsAnchoredOnUpgrade(t *testing.T) {
	path := writeLog(t, 5) // a log from before anchoring
	a, err := OpenAnchor(filepath.Join(t.TempDir(), "anchor"), filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, path, a, 3, 0)
	h, err := verifyWith(t, path, a)
	if err != nil || h.Records != 8 || h.Anchored.Seq != 8 {
		t.Fatalf("head %+v err %v", h, err)
	}
}

// TestTornCheckpointTolerated: a crash in the middle of writing a
// checkpoint leaves half a line; it is ignored and cut off, not fatal.
func TestTornCheckpointTolerated(t *testing.T) {
	path, a := anchored(t, 20, 0)
	f, err := os.OpenFile(a.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"seq":25,"hash":"ab`)
	f.Close()
	if _, err := verifyWith(t, path, a); err != nil {
		t.Fatalf("verify with a torn last checkpoint: %v", err)
	}
	a2, err := OpenAnchor(filepath.Dir(a.Path()), filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, path, a2, 5, 0)
	h, err := verifyWith(t, path, a2)
	if err != nil || h.Anchored.Seq != 25 {
		t.Fatalf("after reopening: %+v %v", h, err)
	}
}

// TestIssueCaseNewest270Of6270 is the case reported: the newest 270 of
// 6,270 records deleted. The chain alone still verifies; the anchor does
// not.
func TestIssueCaseNewest270Of6270(t *testing.T) {
	path, a := anchored(t, 6270, 1000)
	keepLines(t, path, 6000)
	if n, err := verify(path); err != nil || n != 6000 {
		t.Fatalf("chain alone: %d records, %v (it should still verify: that is the gap)", n, err)
	}
	_, err := verifyWith(t, path, a)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Kind != Truncated || !strings.Contains(ve.Msg, "newest 270 records") {
		t.Fatalf("anchored: %v", err)
	}
}

// TestTornCheckpointLine: a checkpoint torn by a crash mid-write (its line
// unterminated) is cut at the next start (OpenAnchor), so the checkpoints
// written after it stay readable and the log keeps verifying over further
// restarts. Were the next checkpoint appended onto the torn line,
// every later start would fail to read the file ("line N: invalid
// character").
func TestTornCheckpointLine(t *testing.T) {
	path, a := anchored(t, 50, 10)
	f, err := os.OpenFile(a.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":60,"first":1,"ha`)
	f.Close()
	if a, err = OpenAnchor(filepath.Dir(a.Path()), filepath.Dir(path)); err != nil { // a restart
		t.Fatal(err)
	}
	appendN(t, path, a, 20, 10) // then more checkpoints
	appendN(t, path, a, 5, 0)   // and another: SetAnchor reads them all
	if h, err := verifyWith(t, path, a); err != nil || h.Anchored == nil || h.Anchored.Seq != 75 {
		t.Fatalf("verify after a torn checkpoint: %+v %v", h, err)
	}
}
