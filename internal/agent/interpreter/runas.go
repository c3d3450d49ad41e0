package interpreter

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// rootUser runs the code when the sandbox user may become root anyway.
const rootUser = "root"

// sudoProbeTimeout bounds the one `sudo -n true` run to decide who runs the
// code.
const sudoProbeTimeout = 10 * time.Second

// runner returns the account that runs the code: Config.User when set;
// else root when the sandbox user (identity.DefaultUser) may become root
// without a password, as E2B's code-interpreter template runs its Jupyter
// server and kernels as root (its user has passwordless sudo, as sbx's
// built-in templates' does); else the sandbox user, so that a template
// without sudo does not hand root to whatever reaches port 49999 (the file
// API keeps the same line: docs/SECURITY.md). Decided once, on first use.
func (s *Server) runner() string {
	s.runnerOnce.Do(func() {
		switch {
		case s.cfg.User != "":
			s.runAs = s.cfg.User
		case os.Geteuid() != 0: // the agent cannot switch: the code runs as it
			s.runAs = identity.DefaultUser
		case s.cfg.CanSudo(identity.DefaultUser):
			s.runAs = rootUser
		default:
			s.runAs = identity.DefaultUser
		}
	})
	return s.runAs
}

// homeUser is the account whose home is a context's default cwd and "~":
// the sandbox user's, whoever runs the code (E2B's kernels run as root in
// /home/user).
func (s *Server) homeUser() string {
	if s.cfg.User != "" {
		return s.cfg.User
	}
	return identity.DefaultUser
}

// canSudo reports whether name may run `sudo -n true` (passwordless sudo to
// root): it runs it as name, with nothing but a PATH, and takes a zero exit.
func canSudo(users identity.Files, name string) bool {
	u, err := users.Lookup(name)
	if err != nil {
		return false
	}
	path, err := exec.LookPath("sudo")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), sudoProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-n", "true")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + defaultPath, "HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: credential(u)}
	return cmd.Run() == nil
}
