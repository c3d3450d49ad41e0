package interpreter

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// newContext registers a context for lang in cwd ("" = the default).
func (s *Server) newContext(lang, cwd string) (*kcontext, error) {
	lang, err := normalizeLanguage(lang)
	if err != nil {
		return nil, err
	}
	if cwd, err = s.resolveCwd(cwd); err != nil {
		return nil, err
	}
	k := newKContext(s, Context{ID: newID(), Language: lang, Cwd: cwd})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errServerClosed
	}
	s.made++
	k.seq = s.made
	s.contexts[k.ID] = k
	return k, nil
}

// defaultContext returns lang's default context, creating it when needed.
func (s *Server) defaultContext(lang string) (*kcontext, error) {
	lang, err := normalizeLanguage(lang)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	k := s.defaults[lang]
	s.mu.Unlock()
	if k != nil {
		return k, nil
	}
	k, err = s.newContext(lang, "")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.defaults[lang]; old != nil { // lost a race: keep the first
		delete(s.contexts, k.ID)
		return old, nil
	}
	s.defaults[lang] = k
	return k, nil
}

func (s *Server) lookup(id string) (*kcontext, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.contexts[id]; k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("%w: %q", errNotFound, id)
}

// remove forgets the context id and kills its kernel.
func (s *Server) remove(id string) error {
	s.mu.Lock()
	k := s.contexts[id]
	delete(s.contexts, id)
	if k != nil && s.defaults[k.Language] == k {
		delete(s.defaults, k.Language)
	}
	s.mu.Unlock()
	if k == nil {
		return fmt.Errorf("%w: %q", errNotFound, id)
	}
	k.close()
	return nil
}

// list returns the contexts in the order they were made, as E2B's server
// lists them (its contexts live in a Python dict): the one made last is last.
func (s *Server) list() []Context {
	s.mu.Lock()
	all := slices.Collect(maps.Values(s.contexts))
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b *kcontext) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Context, 0, len(all))
	for _, k := range all {
		out = append(out, k.Context)
	}
	return out
}

// resolveCwd returns the directory a context runs in: cwd (absolute or
// "~/..."), else the configured default, else the user's home. An explicit
// cwd must be an existing directory the code's user may enter.
func (s *Server) resolveCwd(cwd string) (string, error) {
	home := "/home/" + s.homeUser()
	if u, err := s.cfg.Users.Lookup(s.homeUser()); err == nil && u.Home != "" {
		home = u.Home
	}
	if cwd == "" {
		if cwd = s.cfg.DefaultCwd; cwd == "" {
			return home, nil
		}
	}
	if cwd == "~" || strings.HasPrefix(cwd, "~/") {
		cwd = filepath.Join(home, cwd[1:])
	}
	if !filepath.IsAbs(cwd) || strings.ContainsRune(cwd, 0) {
		return "", fmt.Errorf("%w: cwd %q must be an absolute path", errBadRequest, cwd)
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: cwd %q is not an existing directory", errBadRequest, cwd)
	}
	cwd = filepath.Clean(cwd)
	run := s.runner()
	if u, err := s.cfg.Users.Lookup(run); err == nil && credential(u) != nil && !searchable(cwd, u) {
		return "", fmt.Errorf("%w: cwd %q is not accessible to %s, who runs the code (it needs search permission on every directory of the path)", errBadRequest, cwd, run)
	}
	return cwd, nil
}

// searchable reports whether u may enter dir: search (x) permission on dir
// and each directory above it, by owner, group or other bits, as the kernel
// checks them (root always may; ACLs are not read).
func searchable(dir string, u identity.User) bool {
	if u.UID == 0 {
		return true
	}
	for p := dir; ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil {
			return false
		}
		bit := uint32(0o001)
		if st.Uid == u.UID {
			bit = 0o100
		} else if st.Gid == u.GID || slices.Contains(u.Groups, st.Gid) {
			bit = 0o010
		}
		if st.Mode&bit == 0 {
			return false
		}
		if p == "/" {
			return true
		}
	}
}

// newID returns a random UUID (v4), the form Jupyter kernel IDs take.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// sandboxEnvs are the sandbox's default env vars (set by the daemon's /init).
func (s *Server) sandboxEnvs() map[string]string { return s.cfg.State.Envs() }

// command builds the driver process of c: its interpreter, as the code's
// user (runner), in c's cwd, in a process group of its own.
func (s *Server) command(c Context, envs map[string]string) (*exec.Cmd, error) {
	u, err := s.cfg.Users.Lookup(s.runner())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDriverStart, err)
	}
	bin, args := s.driverFor(c.Language)
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not installed in this sandbox (%s contexts need it): %w", errDriverStart, bin, c.Language, err)
	}
	cmd := exec.Command(path, args...)
	if s.cfg.Launcher != "" {
		cmd = exec.Command(s.cfg.Launcher, append([]string{path, path}, args...)...)
	}
	cmd.Dir = c.Cwd
	if fi, err := os.Stat(c.Cwd); err != nil || !fi.IsDir() {
		cmd.Dir = "/"
	}
	cmd.Env = environ(u, c.Language, envs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: credential(u)}
	return cmd, nil
}

// credential runs as u when the agent is root, else as the agent itself.
func credential(u identity.User) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: slices.Clone(u.Groups)}
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// environ is a driver's environment: the user's basics, then the sandbox's
// env vars (which win), then what the interpreter needs.
func environ(u identity.User, lang string, envs map[string]string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	m := map[string]string{"PATH": path, "HOME": u.Home, "USER": u.Name, "LOGNAME": u.Name, "LANG": "C.UTF-8"}
	if u.Shell != "" {
		m["SHELL"] = u.Shell
	}
	for k, v := range envs {
		m[k] = v
	}
	if lang == Python {
		m["PYDEVD_DISABLE_FILE_VALIDATION"] = "1" // silences a debugger warning on every start
	}
	env := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		env = append(env, k+"="+m[k])
	}
	return env
}
