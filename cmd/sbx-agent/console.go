package main

import (
	"io"
	stdlog "log"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// agentLog is where the agent's stderr goes once it listens, when it is a
// sandbox's PID 1 (sandbox.AgentLog, read by the daemon when the sandbox
// dies on its own).
const agentLog = "/.sbx/agent.log"

// detachConsole points the agent's stdout at /dev/null and its stderr at
// agentLog (/dev/null elsewhere, or if it cannot be made). The runtime
// opened both on a host file, the sandbox's console log (the daemon reads
// it when a start fails, so the agent keeps it until it listens). Left
// open, any root process in the sandbox could write into that host file
// without bound through /proc/1/fd/1 or /proc/1/fd/2. agentLog is in the
// sandbox's own writable layer, counted against its disk quota; only what
// the Go runtime itself writes to fd 2 goes there (a fatal error such as
// "failed to create new OS thread", a panic's stack): the agent's log is
// discarded from now on (console.detach).
func detachConsole() error {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	stderr := null
	if os.Getpid() == 1 {
		if f, err := os.OpenFile(agentLog, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600); err == nil {
			defer f.Close()
			stderr = f
		}
	}
	console.detach()
	for fd, f := range []*os.File{1: null, 2: stderr} {
		if f == nil {
			continue
		}
		if err := unix.Dup3(int(f.Fd()), fd, 0); err != nil {
			return err
		}
	}
	return nil
}

// console is the agent's log output (its slog handler's and the standard
// log package's, where net/http writes): stderr until detachConsole, then
// nothing.
var console = func() *switchWriter {
	w := &switchWriter{}
	stdlog.SetOutput(w)
	return w
}()

type switchWriter struct{ off atomic.Bool }

func (w *switchWriter) Write(b []byte) (int, error) {
	if w.off.Load() {
		return io.Discard.Write(b)
	}
	return os.Stderr.Write(b)
}

func (w *switchWriter) detach() { w.off.Store(true) }
