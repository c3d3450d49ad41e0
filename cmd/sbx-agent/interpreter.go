package main

import (
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/sbx-dev/sbx/internal/agent"
	"github.com/sbx-dev/sbx/internal/agent/identity"
	"github.com/sbx-dev/sbx/internal/agent/interpreter"
	"github.com/sbx-dev/sbx/internal/agent/oomguard"
)

// ipykernelMarker tells whether this sandbox's template has Jupyter: only
// then is a python kernel booted ahead of the first runCode (it costs memory
// and CPU that base sandboxes should not pay).
const ipykernelMarker = "/usr/lib/python3/dist-packages/ipykernel"

// startInterpreter serves the E2B code interpreter on port, sharing the
// agent's /init state (access token, env vars); its drivers start through
// limiter when it is not empty (see useSubreaper); its requests and its prewarm keep act busy.
func startInterpreter(port int, st *identity.State, limiter string, act *oomguard.Activity, log *slog.Logger) (*interpreter.Server, error) {
	_, err := os.Stat(ipykernelMarker)
	code, err2 := interpreter.New(interpreter.Config{State: st, Prewarm: err == nil, Begin: act.Begin, Launcher: limiter, Logger: log})
	if err2 != nil {
		return nil, err2
	}
	srv := &http.Server{
		Addr:              net.JoinHostPort("0.0.0.0", strconv.Itoa(port)),
		Handler:           act.Wrap(code.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       10 * time.Minute,
	}
	l, err := agent.Listen(srv.Addr)
	if err != nil {
		log.Error("code interpreter stopped", "err", err)
		return code, nil
	}
	go func() {
		if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
			log.Error("code interpreter stopped", "err", err)
		}
	}()
	return code, nil
}
