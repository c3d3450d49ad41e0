package oomscore

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func adjOf(t *testing.T, pid string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrefer: a started process ends up ChildBonus above this process
// (clamped to 0..1000), and what it forks after inherits that.
func TestPrefer(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; cat /proc/self/oom_score_adj")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	Prefer(cmd.Process.Pid)
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	want := min(1000, max(adjOf(t, "self"), 0)+ChildBonus)
	if got, _ := strconv.Atoi(strings.TrimSpace(out.String())); got != want {
		t.Fatalf("a child forked after Prefer has oom_score_adj %d, want %d", got, want)
	}
}
