package oci

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRaiseHostPTYs: kernel.pty.max is raised to its floor, never lowered;
// only user-namespace sandboxes' devpts get max=.
func TestRaiseHostPTYs(t *testing.T) {
	old := ptyMax
	ptyMax = filepath.Join(t.TempDir(), "max")
	t.Cleanup(func() { ptyMax = old })
	for _, tc := range []struct{ cur, want int }{{4096, hostPTYs}, {1 << 20, 1 << 20}} {
		if err := os.WriteFile(ptyMax, []byte(strconv.Itoa(tc.cur)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := raiseHostPTYs(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(ptyMax)
		if got, _ := strconv.Atoi(strings.TrimSpace(string(b))); got != tc.want {
			t.Errorf("from %d: pty max %d, want %d", tc.cur, got, tc.want)
		}
	}
	if o := strings.Join(devptsOptions(true), ","); !strings.Contains(o, "max=256") {
		t.Errorf("userns devpts options %s", o)
	}
	if o := strings.Join(devptsOptions(false), ","); strings.Contains(o, "max=") {
		t.Errorf("runsc devpts options %s", o)
	}
}
