package template

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestBuilding(t *testing.T) {
	dir := t.TempDir()
	if Building(dir, "base") {
		t.Fatal("Building before any build")
	}
	done, err := MarkBuilding(context.Background(), dir, "base")
	if err != nil {
		t.Fatal(err)
	}
	if !Building(dir, "base") {
		t.Fatal("not Building while the lock is held")
	}
	if Building(dir, "code-interpreter-v1") {
		t.Fatal("another template reported Building")
	}
	// a second builder waits for the first
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := MarkBuilding(ctx, dir, "base"); err != context.DeadlineExceeded {
		t.Fatalf("second MarkBuilding = %v, want it to wait until the deadline", err)
	}
	done()
	if Building(dir, "base") {
		t.Fatal("Building after done")
	}
}

// TestBuildingAcrossProcesses holds the lock in another process (flock(1))
// as sbx template build would, and sees it end with that process.
func TestBuildingAcrossProcesses(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, ".building-base")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("flock", "--no-fork", "-x", p, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !Building(dir, "base") {
		if time.Now().After(deadline) {
			t.Fatal("the other process's lock is not seen")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if Building(dir, "base") {
		t.Fatal("Building after the builder process died")
	}
}

func TestBuildingRejectsNonBuiltins(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"../x", "mine", ""} {
		if _, err := MarkBuilding(context.Background(), dir, name); err == nil {
			t.Errorf("MarkBuilding(%q) accepted a name that is not a built-in", name)
		}
		if Building(dir, name) {
			t.Errorf("Building(%q) = true", name)
		}
	}
}
