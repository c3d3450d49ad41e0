package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTailBeneath: the agent's log is read beneath the rootfs, only as a
// regular file and never through a link; a long one gives its end.
func TestTailBeneath(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, ".sbx"), 0o700))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600))
	must(os.WriteFile(filepath.Join(root, "long"), []byte(strings.Repeat("a", 100)+"fatal error: end"), 0o600))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "abs-link")))
	must(os.Symlink("long", filepath.Join(root, "rel-link")))
	must(os.Symlink(outside, filepath.Join(root, "dir-link")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	for _, c := range []struct{ rel, want string }{
		{"long", "fatal error: end"},
		{"abs-link", ""},
		{"rel-link", ""},
		{"dir-link/secret", ""},
		{"../" + filepath.Base(outside) + "/secret", ""},
		{"fifo", ""}, // a FIFO nobody writes would block a plain open
		{".sbx", ""},
		{"missing", ""},
	} {
		if got := string(tailBeneath(root, c.rel, 16)); got != c.want {
			t.Errorf("%s: %q, want %q", c.rel, got, c.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"fatal error: x\n\tgoroutine 1\n": "fatal error: x\n\tgoroutine 1",
		"\x1b[2Jclear\x00\xff":            "?[2Jclear??",
		"  \n":                            "",
	} {
		if got := printable([]byte(in)); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
