package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTemplateStack: the floor of an installed template runs on all its
// layers (the top one winning), not on its bottom layer alone; any other
// rootfs is used as it is.
func TestTemplateStack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (an overlay mount)")
	}
	root := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("layers/bottom/r/fs/etc/profile", "slow")
	write("layers/bottom/r/fs/bin/bash", "bash")
	write("layers/top/r/fs/etc/profile", "fast")
	write("base/template.json", `{"layers": ["bottom", "top"]}`)
	if err := os.Symlink("../layers/bottom/r/fs", filepath.Join(root, "base/rootfs")); err != nil {
		t.Fatal(err)
	}
	got, unmount, err := templateStack(filepath.Join(root, "base/rootfs"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer unmount()
	for rel, want := range map[string]string{"etc/profile": "fast", "bin/bash": "bash"} {
		if b, err := os.ReadFile(filepath.Join(got, rel)); err != nil || string(b) != want {
			t.Errorf("%s in the stack: %q %v, want %q", rel, b, err, want)
		}
	}
	other := filepath.Join(root, "layers/bottom/r/fs")
	if p, _, err := templateStack(other, t.TempDir()); err != nil || p != other {
		t.Errorf("a plain rootfs: %q %v", p, err)
	}
}
