package audit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/failpoint"
)

// TestRotationRecovery: every state a crash in the middle of a rotation or
// a prune can leave is resumed from the right head: the log verifies
// against its checkpoints, the next record follows the last one (nothing
// lost, nothing twice) and the next rotation and prune work.
func TestRotationRecovery(t *testing.T) {
	cases := []struct {
		name  string
		crash func(t *testing.T, r *rotated, l *Log) // the state a crash leaves (l is open)
	}{
		{"linked, not swapped", func(t *testing.T, r *rotated, l *Log) {
			must(t, os.Link(r.path, segmentPath(r.path, l.segFirst)))
		}},
		{"active renamed, no new file", func(t *testing.T, r *rotated, l *Log) {
			must(t, os.Rename(r.path, segmentPath(r.path, l.segFirst)))
		}},
		{"new file made, not renamed", func(t *testing.T, r *rotated, l *Log) {
			must(t, os.Link(r.path, segmentPath(r.path, l.segFirst)))
			must(t, os.WriteFile(r.path+".new", nil, 0o600))
		}},
		{"swapped, nothing written yet", func(t *testing.T, r *rotated, l *Log) {
			l.mu.Lock()
			must(t, l.swapLocked())
			l.mu.Unlock()
		}},
		{"signed the new start, segments not deleted", func(t *testing.T, r *rotated, l *Log) {
			segs := r.segments(t)
			must(t, l.signFirst(segs[len(segs)-1].first))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRotated(t, true)
			r.write(t, 2048, 0, 60, 10) // keep all: several segments
			l := r.open(t, 0, 0)
			must(t, l.Append("api", "", "k", nil))
			tc.crash(t, r, l)
			seq := l.seq
			l.timer.Stop() // the crash: no Close, no final checkpoint

			h, err := r.verify(t)
			if err != nil || h.Records != seq {
				t.Fatalf("after the crash: %+v %v", h, err)
			}
			r.write(t, 2048, 2, 30, 0) // restart, rotate, prune to 2
			if _, err := os.Stat(r.path + ".new"); err == nil {
				t.Fatal("audit.log.new left")
			}
			h, err = r.verify(t)
			if err != nil || h.Records != seq+30 || h.Segments != 2 {
				t.Fatalf("after the restart: %+v %v", h, err)
			}
		})
	}
}

// TestRotationFailureLosesNothing: a rotation that fails at its middle
// step leaves the log appending to its active file; a prune whose
// checkpoint cannot be written deletes nothing.
func TestRotationFailureLosesNothing(t *testing.T) {
	for _, point := range []string{"audit/rotate-linked", "audit/prune-signed"} {
		t.Run(point, func(t *testing.T) {
			r := newRotated(t, true)
			failpoint.Set(point + "=error")
			defer failpoint.Set("")
			var errs []error
			l := r.open(t, 1024, 1)
			l.SetHooks(Hooks{Error: func(err error) { errs = append(errs, err) }})
			for range 30 {
				must(t, l.Append("api", "", "k", nil))
			}
			l.stopPruner() // the prune's report is in
			must(t, l.Close())
			if len(errs) == 0 {
				t.Fatal("the failure was not reported")
			}
			h, err := r.verify(t)
			if err != nil || h.Records != 30 || h.First != 1 {
				t.Fatalf("after failed rotations: %+v %v", h, err)
			}
			failpoint.Set("")
			r.write(t, 1024, 1, 10, 0)
			if h, err := r.verify(t); err != nil || h.Records != 40 || h.Segments != 1 {
				t.Fatalf("once it works again: %+v %v", h, err)
			}
		})
	}
}

// childEnv marks the test binary run as the writer TestRotationKilled kills.
const childEnv = "SBX_AUDIT_ROTATE_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(rotateChild(dir))
	}
	os.Exit(m.Run())
}

// rotateChild appends records to the anchored log in dir (rotating at 1
// KiB, keeping 2), printing each seq once Append has returned, until it
// is killed.
func rotateChild(dir string) int {
	a, err := OpenAnchor(filepath.Join(dir, "anchor"), filepath.Join(dir, "data"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := Open(filepath.Join(dir, "data", FileName))
	if err == nil {
		err = l.SetAnchor(a)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l.SetRotation(1024, 2)
	for i := 0; ; i++ {
		if err := l.Append("api", "", "k", map[string]string{"i": strconv.Itoa(i)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(l.seq)
		if i%7 == 0 {
			_ = l.Checkpoint()
		}
	}
}

// TestRotationKilled kills a writing process at each step of a rotation
// and a prune (failpoints) and at random moments, restarts it each time
// on the same log, and checks after each kill that the log verifies
// against its checkpoints, holds every record Append returned for, and
// goes on from there.
func TestRotationKilled(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "data"), 0o700))
	kills := []string{"audit/rotate-linked=kill", "audit/rotate-swapped=kill", "audit/prune-signed=kill", "", "", "", ""}
	var acked uint64
	for i, fp := range kills {
		last := runChild(t, dir, fp, time.Duration(100+i*40)*time.Millisecond)
		acked = max(acked, last)
		cps, err := ReadCheckpoints(mustPath(t, dir), mustPub(t, dir))
		must(t, err)
		h, err := VerifyAnchored(filepath.Join(dir, "data", FileName), cps)
		if err != nil {
			t.Fatalf("kill %d (%q): %v", i, fp, err)
		}
		if h.Records < acked || h.Records > acked+1 {
			t.Fatalf("kill %d (%q): log ends at seq %d, Append returned for seq %d", i, fp, h.Records, acked)
		}
		acked = h.Records
		if i == len(kills)-1 && h.First <= 1 { // a kill may land before a prune catches up
			t.Fatalf("never pruned: %+v", h)
		}
	}
}

// runChild runs the writer with failpoint fp armed (or, with none, kills
// it after the delay) and returns the last seq it printed.
func runChild(t *testing.T, dir, fp string, after time.Duration) uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir, "SBX_FAILPOINTS="+fp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	if fp == "" {
		time.AfterFunc(after, func() { _ = cmd.Process.Kill() })
	}
	var last uint64
	s := bufio.NewScanner(out)
	for s.Scan() {
		if n, err := strconv.ParseUint(s.Text(), 10, 64); err == nil {
			last = n
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("writer with %q ended without being killed: %v\n%s", fp, err, stderr.String())
	}
	return last
}

func mustPath(t *testing.T, dir string) string {
	t.Helper()
	p, err := CheckpointPath(filepath.Join(dir, "anchor"), filepath.Join(dir, "data"))
	must(t, err)
	return p
}

func mustPub(t *testing.T, dir string) []byte {
	t.Helper()
	pub, err := LoadPublicKey(filepath.Join(dir, "anchor"))
	must(t, err)
	return pub
}
