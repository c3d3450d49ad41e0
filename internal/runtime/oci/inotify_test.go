package oci

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestRaiseHostInotify: the host's bounds are raised to their floors, never
// lowered.
func TestRaiseHostInotify(t *testing.T) {
	dir := t.TempDir() + "/"
	old := hostSysctl
	hostSysctl = dir
	t.Cleanup(func() { hostSysctl = old })
	write := func(name string, v int) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strconv.Itoa(v)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("max_user_instances", 128)
	write("max_user_watches", 1<<30)
	if err := raiseHostInotify(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"max_user_instances": strconv.Itoa(hostInotifyInstances), "max_user_watches": "1073741824\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
}

// TestLimitInotifyRefusesHostNamespace: a pid in the daemon's own user
// namespace (a sandbox init whose pid was reused) is refused, so the host's
// bounds are never written as a sandbox's.
func TestLimitInotifyRefusesHostNamespace(t *testing.T) {
	if err := limitInotify(context.Background(), os.Getpid()); err == nil {
		t.Fatal("limitInotify of the test's own pid succeeded")
	}
}
