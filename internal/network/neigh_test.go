package network

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRaiseNeighbourTable: thresholds below what the sandboxes need are
// raised, higher ones are left alone, a missing table is an error.
func TestRaiseNeighbourTable(t *testing.T) {
	old := neighDir
	t.Cleanup(func() { neighDir = old })
	neighDir = t.TempDir()
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(neighDir, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(neighDir, name))
		return string(b)
	}
	write("gc_thresh3", "1024")
	write("gc_thresh2", "8192")
	got, err := RaiseNeighbourTable(1000)
	if err != nil || got != "gc_thresh3 1024->3024" {
		t.Fatalf("RaiseNeighbourTable = %q, %v", got, err)
	}
	if read("gc_thresh3") != "3024" || read("gc_thresh2") != "8192\n" {
		t.Fatalf("thresholds now %q %q", read("gc_thresh3"), read("gc_thresh2"))
	}
	if got, err := RaiseNeighbourTable(1000); err != nil || got != "" {
		t.Fatalf("second call = %q, %v; want no change", got, err)
	}
	neighDir = filepath.Join(neighDir, "missing")
	if _, err := RaiseNeighbourTable(10); err == nil {
		t.Fatal("no error for a missing table")
	}
}
