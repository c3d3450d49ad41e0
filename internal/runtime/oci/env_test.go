package oci

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/runtime/runtimetest"
)

// TestRuntimeEnv: nothing of the daemon's environment reaches the runtime's
// host processes; runsc's gofer and sandbox live as long as the sandbox.
func TestRuntimeEnv(t *testing.T) {
	t.Setenv("SBX_API_KEY", "e2b_must_not_leak")
	r, err := New("runsc", testConfig("runsc", t.TempDir()))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { r.Close() })
	fx := runtimetest.NewFixture(t)
	s, _ := fx.Spec(t, r, "exec sleep 1000", runtime.Limits{})
	sb, err := r.Create(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Delete(context.Background()) })
	var seen int
	for deadline := time.Now().Add(10 * time.Second); seen == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		seen = checkEnvOf(t, s.ID)
	}
	if seen == 0 {
		t.Fatal("no host process of the sandbox found")
	}
}

// checkEnvOf fails the test for any host process naming id in its command
// line whose environment holds more than PATH, and counts them.
func checkEnvOf(t *testing.T, id string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, p := range procs {
		cmdline, err := os.ReadFile(p + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(id)) || bytes.Contains(cmdline, []byte("sleep")) {
			continue
		}
		env, err := os.ReadFile(p + "/environ")
		if err != nil {
			continue
		}
		n++
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv != "" && !strings.HasPrefix(kv, "PATH=") {
				t.Errorf("%s (%s) has %q in its environment", p, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), kv)
			}
		}
	}
	return n
}
