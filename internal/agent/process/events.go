package process

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/agent/eventlog"
)

// processLogger is the logger name of process events (envd's).
const processLogger = "processSvc"

// SetEvents makes the service record each process it starts and how it
// ended into l (nil: none). Call before serving.
func (s *Service) SetEvents(l *eventlog.Log) { s.events = l }

// started records p's start.
func (s *Service) started(p *proc, sp *spec) {
	f := map[string]string{"pid": strconv.FormatUint(uint64(p.pid), 10), "cmd": commandLine(sp)}
	if p.tag != nil {
		f["tag"] = *p.tag
	}
	if sp.pty != nil {
		f["pty"] = "true"
	}
	s.events.Add("info", processLogger, "Process started", f)
}

// ended records how p ended: its exit code, or the signal that killed it,
// and whether its lifetime (the Start call's timeout) ran out.
func (s *Service) ended(p *proc) {
	f := map[string]string{"pid": strconv.FormatUint(uint64(p.pid), 10), "status": statusString(p.ws)}
	level, msg := "info", "Process ended"
	switch {
	case p.timedOut.Load():
		level, msg, f["reason"] = "warn", "Process killed: timeout", "timeout"
	case p.ws.Signaled():
		level, msg, f["signal"] = "warn", "Process killed by signal", unix.SignalName(p.ws.Signal())
	case p.ws.Exited():
		f["exit_code"] = strconv.Itoa(p.ws.ExitStatus())
		if p.ws.ExitStatus() != 0 {
			level, msg = "error", "Process exited with an error"
		}
	}
	s.events.Add(level, processLogger, msg, f)
}

// commandLine is the command and its arguments as one string (bounded).
func commandLine(sp *spec) string {
	s := strings.Join(sp.argv, " ")
	if len(s) > 256 {
		s = s[:256]
	}
	return s
}
