package oci

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// fakeBinary writes an executable shell script standing in for the runtime.
func fakeBinary(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-runtime")
	script := "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\n" + body + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRuntimeBinaryFailures: a hanging runtime binary is cut off at the
// timeout (with its children), its stderr ends up in the error, and a
// missing binary is ErrUnavailable.
func TestRuntimeBinaryFailures(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		notFound         bool
	}{
		{"hangs", `sleep 30 & sleep 30`, "signal: killed", false},
		{"stderr", `echo "boom: broken state" >&2; exit 1`, "boom: broken state", false},
		{"unknown id", `echo "container does not exist" >&2; exit 1`, "not found", true},
		{"bad json", `echo '{not json'`, "state", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New("runc", Config{Binary: fakeBinary(t, tc.body), StateDir: t.TempDir(), Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = r.Load(context.Background(), "abc")
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, runtime.ErrNotFound) != tc.notFound {
				t.Fatalf("Load = %v, want %q (not found %v)", err, tc.want, tc.notFound)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("Load took %s", d)
			}
			if errors.Is(err, runtime.ErrTimeout) != (tc.name == "hangs") {
				t.Fatalf("Load = %v: ErrTimeout must mark exactly the timed-out command", err)
			}
		})
	}
}

func TestNewUnavailable(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho cannot load >&2; exit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ kind, bin string }{
		{"runc", "/nonexistent/runc"},
		{"kata", ""},
		{"crun", broken},
	} {
		if _, err := New(tc.kind, Config{Binary: tc.bin, StateDir: t.TempDir()}); !errors.Is(err, runtime.ErrUnavailable) {
			t.Errorf("New(%s, %s) = %v, want ErrUnavailable", tc.kind, tc.bin, err)
		}
	}
}
