package interpreter

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// TestRunner: the code runs as root when the sandbox user may become root
// without a password (E2B's template runs its kernels as root), else as the
// sandbox user; either way a context's default cwd is the sandbox user's
// home, and root may take a cwd user cannot enter (E2B's cwd '/root').
// Needs root: the agent switches users only then.
func TestRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the agent runs code as another user only as root")
	}
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	home := filepath.Join(dir, "home")
	private := filepath.Join(dir, "root")
	for _, d := range []string{home, private} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, 0o755)               //nolint:errcheck
	os.Chmod(filepath.Dir(dir), 0o755) //nolint:errcheck
	lines := "root:x:0:0::" + private + ":/bin/sh\nuser:x:4242:4242::" + home + ":/bin/sh\n"
	if err := os.WriteFile(passwd, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "group"), nil, 0o644) //nolint:errcheck
	users := identity.Files{Passwd: passwd, Group: filepath.Join(dir, "group")}
	for _, tt := range []struct {
		name, user string
		sudo       bool
		want       string
		privateOK  bool
	}{
		{"sudo", "", true, "root", true},
		{"no sudo", "", false, "user", false},
		{"explicit user", "user", true, "user", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			s, err := New(Config{Python: "/bin/true", User: tt.user, Users: users,
				CanSudo: func(n string) bool { asked = append(asked, n); return tt.sudo }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.runner(); got != tt.want {
				t.Errorf("runner = %q, want %q", got, tt.want)
			}
			if s.runner(); len(asked) > 1 {
				t.Errorf("CanSudo asked %d times, want at most once", len(asked))
			}
			if cwd, err := s.resolveCwd(""); err != nil || cwd != home {
				t.Errorf("default cwd = %q, %v, want the sandbox user's home %q", cwd, err, home)
			}
			if _, err := s.resolveCwd(private); (err == nil) != tt.privateOK {
				t.Errorf("cwd %s (root's 0700): %v, want accepted %v", private, err, tt.privateOK)
			}
			cmd, err := s.command(Context{Language: Python, Cwd: home}, nil)
			if err != nil {
				t.Fatal(err)
			}
			uid := map[string]uint32{"root": 0, "user": 4242}[tt.want]
			if c := cmd.SysProcAttr.Credential; c == nil || c.Uid != uid {
				t.Errorf("driver credential %+v, want uid %d", c, uid)
			}
		})
	}
}
