// Package interpreter is the sandbox's code interpreter on port 49999: the
// E2B code-interpreter HTTP API (/execute streaming NDJSON, /contexts) that
// the official @e2b/code-interpreter SDKs speak (contract §4).
//
// Each context is a stateful driver process running as root when the
// sandbox user has passwordless sudo (as E2B's template runs its kernels),
// else as the sandbox user, in the sandbox user's home by default:
//   - python, r: kernel_driver.py starts a real Jupyter kernel (ipykernel,
//     IRkernel) with jupyter_client's KernelManager and drives it over the
//     Jupyter messaging protocol;
//   - javascript, typescript: node_driver.js keeps one vm context alive
//     (typescript is transpiled per cell with the tsc API);
//   - java: java_driver.java keeps one JShell (jdk.jshell) state alive;
//   - bash: bash_driver.py keeps one bash process alive.
//
// The drivers are embedded and written to a private directory at start.
// The server talks to each driver with JSON lines (requests on its stdin,
// events on its fd 3) and interrupts it with SIGINT to its kernel's process
// group. A dead driver is reported as an error and replaced on next use.
package interpreter

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// DefaultPort is the code interpreter's port, which the E2B SDKs assume.
const DefaultPort = 49999

//go:embed kernel_driver.py ipykernel_fast.py ipykernel_e2b.py ipykernel_charts.py node_driver.js bash_driver.py java_driver.java
var drivers embed.FS

// Config configures a Server. Zero values take the defaults.
type Config struct {
	// Python, Node and Java are the interpreters; default "python3",
	// "node" and "java", looked up in the agent's PATH.
	Python, Node, Java string
	// User runs the code, its home the default cwd; default root when
	// CanSudo(identity.DefaultUser), else identity.DefaultUser, in
	// identity.DefaultUser's home (Server.runner).
	User string
	// CanSudo reports whether a user may become root without a password;
	// default: `sudo -n true` run as that user succeeds.
	CanSudo func(name string) bool
	// State gives the access token checked on /execute and the sandbox's
	// default env vars; default a fresh identity.NewState() (no token).
	State *identity.State
	// Users are the account databases; default identity.DefaultFiles.
	Users identity.Files
	// DefaultCwd is the cwd of contexts that ask for none; default the
	// user's home.
	DefaultCwd string
	// Prewarm starts the default python context in the background at New,
	// so the first runCode does not wait for the kernel to boot.
	Prewarm bool
	// Begin, when set, is called before the prewarm starts and the end it
	// returns once the prewarm is over (the agent's OOM guard stays awake
	// meanwhile: oomguard.Activity.Begin); nil: nothing.
	Begin func() (end func())
	// Launcher, when not empty, is a program that executes its arguments
	// (a driver's path and argv) after bounding its processes: the agent's
	// process-limit shim under gVisor, so a fork bomb in a kernel fails
	// inside. Empty: drivers start directly.
	Launcher string
	// Logger gets driver failures; default slog.Default().
	Logger *slog.Logger
}

// Server is the code interpreter. Its zero value is not usable; call New.
type Server struct {
	cfg     Config
	dir     string // the drivers, written out
	handler http.Handler

	runnerOnce sync.Once
	runAs      string // who runs the code: runner

	mu       sync.Mutex
	contexts map[string]*kcontext
	made     uint64               // contexts made so far: the next one's seq
	defaults map[string]*kcontext // language → default context
	closed   bool
}

// New writes out the drivers and builds the routes. It succeeds even when
// no interpreter is installed: executions then fail with a clear error.
func New(cfg Config) (*Server, error) {
	cfg = withDefaults(cfg)
	dir, err := writeDrivers()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, dir: dir, contexts: map[string]*kcontext{}, defaults: map[string]*kcontext{}}
	s.handler = s.routes()
	if cfg.Prewarm {
		// E2B's server has a python and a javascript context from its
		// start, listed in that order; javascript's driver starts on use.
		for _, lang := range []string{Python, JavaScript} {
			if _, err := s.defaultContext(lang); err != nil {
				cfg.Logger.Info("interpreter: no default context", "language", lang, "err", err)
			}
		}
		end := func() {}
		if cfg.Begin != nil {
			end = cfg.Begin()
		}
		go func() {
			defer end()
			s.prewarm()
		}()
	}
	return s, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Python == "" {
		cfg.Python = "python3"
	}
	if cfg.Node == "" {
		cfg.Node = "node"
	}
	if cfg.Java == "" {
		cfg.Java = "java"
	}
	if cfg.State == nil {
		cfg.State = identity.NewState()
	}
	if cfg.Users == (identity.Files{}) {
		cfg.Users = identity.DefaultFiles
	}
	if cfg.CanSudo == nil {
		users := cfg.Users
		cfg.CanSudo = func(name string) bool { return canSudo(users, name) }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg
}

// writeDrivers copies the embedded drivers to a new directory that the
// sandbox user can read but not change.
func writeDrivers() (string, error) {
	dir, err := os.MkdirTemp("", "sbx-interpreter-")
	if err != nil {
		return "", fmt.Errorf("interpreter: %w", err)
	}
	entries, _ := drivers.ReadDir(".")
	for _, e := range entries {
		b, _ := drivers.ReadFile(e.Name())
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("interpreter: write driver: %w", err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("interpreter: %w", err)
	}
	return dir, nil
}

// Handler returns the HTTP API.
func (s *Server) Handler() http.Handler { return s.handler }

// Close kills every context's kernel and removes the drivers. Requests
// after Close fail.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	all := s.contexts
	s.contexts, s.defaults = map[string]*kcontext{}, map[string]*kcontext{}
	s.mu.Unlock()
	for _, k := range all {
		k.close()
	}
	return os.RemoveAll(s.dir)
}

// prewarm starts the default python context's kernel.
func (s *Server) prewarm() {
	k, err := s.defaultContext(Python)
	if err != nil {
		return
	}
	if err := k.acquire(context.Background()); err != nil {
		return
	}
	defer k.release()
	if _, err := k.driver(); err != nil {
		s.cfg.Logger.Info("interpreter: python context not prewarmed", "err", err)
	}
}

// Errors the handlers map to statuses.
var (
	errBadRequest    = errors.New("bad request")
	errUnsupported   = errors.New("unsupported language")
	errNotFound      = errors.New("context not found")
	errContextClosed = errors.New("context was removed")
	errServerClosed  = errors.New("interpreter is shut down")
)
