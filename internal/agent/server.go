// Package agent is the sbx-agent's HTTP server: one port (49983) serving,
// like E2B's envd, the Connect process.Process and filesystem.Filesystem
// services, /files, /health, /init, /envs and /metrics, over HTTP/1.1 and
// unencrypted HTTP/2, behind one access-token check.
package agent

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/sbx-dev/sbx/api/proto/envd/filesystem/filesystemconnect"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
	"github.com/sbx-dev/sbx/internal/agent/eventlog"
	"github.com/sbx-dev/sbx/internal/agent/files"
	"github.com/sbx-dev/sbx/internal/agent/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/identity"
	"github.com/sbx-dev/sbx/internal/agent/process"
)

// DefaultPort is envd's port, which the E2B SDKs assume.
const DefaultPort = 49983

// Config configures a Server. Zero values take the defaults.
type Config struct {
	// Addr is the listen address; default 0.0.0.0:49983.
	Addr string
	// InitToken is the secret the daemon sends as X-Sbx-Init-Token on
	// POST /init. Empty (local debugging) lets /init through while no access
	// token is set, or with the current X-Access-Token.
	InitToken string
	// State is the /init state; default a fresh identity.NewState().
	State *identity.State
	// Users are the account databases; default identity.DefaultFiles.
	Users identity.Files
	// Logger gets startup and error logs; default slog.Default().
	Logger *slog.Logger
	// Events is the log of processes started and ended (and whatever else
	// is added to it), served to the daemon at GET /sbx/events; default a
	// fresh eventlog.New().
	Events *eventlog.Log

	// The services; nil builds the agent's own.
	Process    processconnect.ProcessHandler
	Filesystem filesystemconnect.FilesystemHandler
	Files      http.Handler

	// TrustRoot is the sandbox's root, where /init's egressCA is
	// installed (its system CA bundle and own file) and the sandbox's ids
	// are written (run/e2b, runids.go); default "/".
	TrustRoot string

	// Wrap, when not nil, wraps every route, ahead of authentication (the
	// OOM guard's wake-up on requests: oomguard.Activity).
	Wrap func(http.Handler) http.Handler

	// metrics reads the sandbox's resource figures; nil reads the real ones.
	metrics *metricsSource
}

// Server is the agent's HTTP server.
type Server struct {
	cfg     Config
	state   *identity.State
	log     *slog.Logger
	handler http.Handler
	http    *http.Server
	closers []func()
	trust   trustMemo  // the egress CA this process installed
	runIDs  runIDsMemo // the /run/e2b ids this process wrote
}

// maxRPCBytes bounds one Connect request message (SendInput carries stdin).
const maxRPCBytes = 64 << 20

// compressMinBytes: smaller responses are never gzipped, even for clients
// that accept it (connect-go does by default; the E2B SDKs do not). Events
// are small and the agent is reached over loopback or a veth.
const compressMinBytes = 8 << 10

// NewServer builds the server and its routes; it does not listen yet.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = net.JoinHostPort("0.0.0.0", "49983")
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, err
	}
	if cfg.State == nil {
		cfg.State = identity.NewState()
	}
	if cfg.Users == (identity.Files{}) {
		cfg.Users = identity.DefaultFiles
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.metrics == nil {
		cfg.metrics = newMetricsSource("/")
	}
	if cfg.Events == nil {
		cfg.Events = eventlog.New()
	}
	s := &Server{cfg: cfg, state: cfg.State, log: cfg.Logger}
	if cfg.Process == nil {
		svc := process.New(cfg.State, cfg.Users)
		svc.SetEvents(cfg.Events)
		s.closers = append(s.closers, func() { svc.Close(5 * time.Second) })
		cfg.Process = svc
	}
	if cfg.Filesystem == nil {
		svc := filesystem.New(cfg.State, cfg.Users)
		s.closers = append(s.closers, svc.Close)
		cfg.Filesystem = svc
	}
	if cfg.Files == nil {
		cfg.Files = files.NewHandler(cfg.State, cfg.Users)
	}
	opts := []connect.HandlerOption{connect.WithReadMaxBytes(maxRPCBytes), connect.WithCompressMinBytes(compressMinBytes)}
	mux := http.NewServeMux()
	mux.Handle(processconnect.NewProcessHandler(cfg.Process, opts...))
	mux.Handle(filesystemconnect.NewFilesystemHandler(cfg.Filesystem, opts...))
	mux.Handle("/files", cfg.Files)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("POST /init", s.handleInit)
	mux.HandleFunc("GET /envs", s.handleEnvs)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.Handle("GET /sbx/events", cfg.Events)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	s.handler = s.authenticate(mux)
	if cfg.Wrap != nil {
		s.handler = cfg.Wrap(s.handler)
	}

	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	s.http = &http.Server{
		Addr:              cfg.Addr,
		Handler:           s.handler,
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       10 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		// No ReadTimeout or WriteTimeout: streams (Start, WatchDir,
		// StreamInput, /files) last as long as their processes and files.
	}
	return s, nil
}

// Addr is the address the server is configured to listen on.
func (s *Server) Addr() string { return s.cfg.Addr }

// Handler returns the server's routes behind the access-token check.
func (s *Server) Handler() http.Handler { return s.handler }

// ListenAndServe listens on the configured address and serves until
// Shutdown; it then returns http.ErrServerClosed.
func (s *Server) ListenAndServe() error {
	l, err := Listen(s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Serve serves on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	s.log.Info("sbx-agent listening", "addr", l.Addr().String(), "init_token", s.cfg.InitToken != "")
	return s.http.Serve(l)
}

// Shutdown stops accepting requests, kills the processes the agent started
// and stops its watchers, then waits for open requests until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.closers {
		c()
	}
	err := s.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.http.Close()
	}
	return err
}
