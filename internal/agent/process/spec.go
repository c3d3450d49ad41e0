package process

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"connectrpc.com/connect"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// defaultPath is PATH for processes when the agent itself has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// spec is a validated StartRequest: everything needed to fork the process.
type spec struct {
	path  string   // executable, resolved in the process's own PATH
	argv  []string // argv[0] is the command as requested
	env   []string
	dir   string
	cred  *syscall.Credential // nil: run as the agent's own user
	pty   *rpc.PTY
	stdin bool
	tag   *string
	cfg   *rpc.ProcessConfig // as reported by List
}

// buildSpec validates req for user u. Its errors are Connect errors.
func (s *Service) buildSpec(u identity.User, req *rpc.StartRequest) (*spec, error) {
	cfg := req.GetProcess()
	if cfg.GetCmd() == "" {
		return nil, errorf(connect.CodeInvalidArgument, "process.cmd is empty")
	}
	env, err := s.environ(u, cfg.GetEnvs(), req.GetPty() != nil)
	if err != nil {
		return nil, err
	}
	dir, err := s.workdir(u, cfg.Cwd)
	if err != nil {
		return nil, err
	}
	path, err := lookPath(cfg.GetCmd(), dir, envValue(env, "PATH"))
	if err != nil {
		return nil, err
	}
	cred, err := credential(u)
	if err != nil {
		return nil, err
	}
	if p := req.GetPty(); p != nil && (p.GetSize().GetCols() > 0xffff || p.GetSize().GetRows() > 0xffff) {
		return nil, errorf(connect.CodeInvalidArgument, "pty size %dx%d out of range", p.GetSize().GetCols(), p.GetSize().GetRows())
	}
	return &spec{
		path: path, argv: append([]string{cfg.GetCmd()}, cfg.GetArgs()...), env: env, dir: dir,
		cred: cred, pty: req.GetPty(), stdin: req.Stdin == nil || req.GetStdin(), tag: req.Tag, cfg: cfg,
	}, nil
}

// environ is the process's environment: PATH, HOME, USER, LOGNAME and SHELL
// for u (TERM too for a PTY), overlaid by the defaults from /init, overlaid
// by the request's own envs. The result is sorted by name.
func (s *Service) environ(u identity.User, req map[string]string, pty bool) ([]string, error) {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	m := map[string]string{"PATH": path, "HOME": u.Home, "USER": u.Name, "LOGNAME": u.Name}
	if u.Shell != "" {
		m["SHELL"] = u.Shell
	}
	if pty {
		m["TERM"] = "xterm-256color"
	}
	maps.Copy(m, s.state.Envs())
	for k, v := range req {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, errorf(connect.CodeInvalidArgument, "invalid environment variable %q", k)
		}
		m[k] = v
	}
	env := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		env = append(env, k+"="+m[k])
	}
	return env, nil
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// workdir resolves the requested cwd: "~" and "~/x" are in u's home, other
// relative paths are taken from the default directory, which is the
// workdir set by /init, else u's home. An explicit cwd must be an existing
// directory; when none is given and the default is missing, "/" is used.
func (s *Service) workdir(u identity.User, cwd *string) (string, error) {
	base := s.state.DefaultWorkdir()
	if base == "" {
		base = u.Home
	}
	if cwd == nil || *cwd == "" {
		if fi, err := os.Stat(base); err == nil && fi.IsDir() {
			return base, nil
		}
		return "/", nil
	}
	dir := *cwd
	switch {
	case strings.ContainsRune(dir, 0):
		return "", errorf(connect.CodeInvalidArgument, "invalid cwd %q", dir)
	case dir == "~":
		dir = u.Home
	case strings.HasPrefix(dir, "~/"):
		dir = filepath.Join(u.Home, dir[2:])
	case !filepath.IsAbs(dir):
		dir = filepath.Join(base, dir)
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) { // envd's wording, which callers match
		return "", errorf(connect.CodeInvalidArgument, "cwd '%s' does not exist", dir)
	}
	if err != nil {
		return "", errorf(connect.CodeInvalidArgument, "cwd %q: %v", dir, unwrapPathError(err))
	}
	if !fi.IsDir() {
		return "", errorf(connect.CodeInvalidArgument, "cwd %q is not a directory", dir)
	}
	return dir, nil
}

// lookPath finds cmd like execvp does, but in the process's own PATH rather
// than the agent's. A cmd with a slash is used as it is (relative to dir).
func lookPath(cmd, dir, path string) (string, error) {
	if strings.ContainsRune(cmd, 0) {
		return "", errorf(connect.CodeInvalidArgument, "invalid cmd %q", cmd)
	}
	if strings.Contains(cmd, "/") {
		return cmd, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, cmd)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errorf(connect.CodeInvalidArgument, "executable %q not found in PATH", cmd)
}

// credential returns the credential to run as u. An agent that is not root
// can only run processes as itself.
func credential(u identity.User) (*syscall.Credential, error) {
	euid := os.Geteuid()
	if euid != 0 {
		if int(u.UID) != euid {
			return nil, errorf(connect.CodePermissionDenied, "agent runs as uid %d and cannot run processes as %s", euid, u.Name)
		}
		return nil, nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: slices.Clone(u.Groups)}, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// errorf returns a Connect error with code c.
func errorf(c connect.Code, format string, args ...any) error {
	return connect.NewError(c, fmt.Errorf(format, args...))
}
