// Command sbx-agent is the in-sandbox daemon: it runs inside every sandbox
// (as its PID 1) and serves, on one port, the envd-compatible protocol the
// E2B SDKs speak: processes, files, /health, /init, /envs and /metrics.
//
//	sbx-agent [--port 49983]
//
// The daemon passes a secret in SBX_AGENT_INIT_TOKEN; the agent takes it out
// of its environment before anything else runs, and accepts POST /init only
// with that secret in X-Sbx-Init-Token.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/agent"
	"github.com/sbx-dev/sbx/internal/agent/eventlog"
	"github.com/sbx-dev/sbx/internal/agent/identity"
	"github.com/sbx-dev/sbx/internal/agent/oomguard"
	"github.com/sbx-dev/sbx/internal/agent/process"
	"github.com/sbx-dev/sbx/internal/agent/shim"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == process.SubreaperExecArg {
		process.SubreaperExec(os.Args[2:]) // a command's first step (see process.UseSubreaperExec)
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sbx-agent:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	initToken := takeInitToken()
	undumpable()
	fs := flag.NewFlagSet("sbx-agent", flag.ContinueOnError)
	port := fs.Int("port", agent.DefaultPort, "TCP port to listen on (all addresses)")
	codePort := fs.Int("code-port", 49999, "port of the code interpreter (0: off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *port <= 0 || *port > 65535 {
		return fmt.Errorf("invalid --port %d", *port)
	}
	events := eventlog.New()
	log := slog.New(eventlog.NewHandler(slog.NewTextHandler(console, &slog.HandlerOptions{Level: slog.LevelInfo}), events))
	reserveThreads(reservedThreads)
	// Orphans of the sandbox's processes are re-parented to the agent (it is
	// PID 1, or becomes a subreaper) and reaped by it.
	if err := process.EnableSubreaper(); err != nil {
		log.Warn("cannot become a child subreaper; orphans are left to init", "err", err)
	}
	limiter := useSubreaper(log)
	st := identity.NewState()
	act := oomguard.NewActivity() // requests wake the OOM guard (oomguard.Activity)
	srv, err := agent.NewServer(agent.Config{
		Addr:      net.JoinHostPort("0.0.0.0", strconv.Itoa(*port)),
		InitToken: initToken,
		State:     st,
		Logger:    log,
		Events:    events,
		Wrap:      act.Wrap,
	})
	if err != nil {
		return err
	}
	if *codePort > 0 {
		code, err := startInterpreter(*codePort, st, limiter, act, log)
		if err != nil {
			return err
		}
		defer code.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if os.Getpid() == 1 && underGVisor() {
		go oomguard.Run(ctx, log, act) // the offender dies inside, not the whole sandbox
	}
	l, err := agent.Listen(srv.Addr())
	if err != nil {
		return err
	}
	if err := detachConsole(); err != nil {
		return fmt.Errorf("detach from the console log: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("sbx-agent shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// useSubreaper makes each command's leader a subreaper of its own tree, so
// a timeout or kill ends its double-forked descendants too: through the
// shim installed in the sandbox (/.sbx, root's), or, in a debug agent not
// running as a sandbox's PID 1 or where the shim cannot be written, through
// the agent's own binary. Under gVisor the shim also bounds the processes of
// every user, root included (commandNproc), and it returns the path of a
// second shim that only bounds them, for the code interpreter's drivers
// ("" elsewhere).
func useSubreaper(log *slog.Logger) (limiter string) {
	path := ""
	if os.Getpid() == 1 {
		n := commandNproc()
		var err error
		if path, err = shim.Install("/.sbx", "subreaper", shim.ELF(n)); err != nil {
			log.Warn("cannot install the subreaper shim; commands start through the agent binary, their processes unbounded", "err", err)
			path = ""
		}
		if n > 0 {
			if limiter, err = shim.Install("/.sbx", "nproc", shim.LimitELF(n)); err != nil {
				log.Warn("cannot install the process-limit shim; the code interpreter's processes are unbounded", "err", err)
				limiter = ""
			}
		}
	}
	exe, err := os.Executable()
	if err != nil && path == "" {
		log.Warn("commands start without their own subreaper; a kill may miss double-forked descendants", "err", err)
	}
	process.UseSubreaperExec(path, exe)
	return limiter
}
