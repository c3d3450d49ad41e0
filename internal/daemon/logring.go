package daemon

import (
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/sbx-dev/sbx/internal/reqid"
)

// logRing keeps the daemon's newest log lines for `sbx debug bundle` (GET
// /sbx/debug/logs): at most ringLines lines of at most ringLineMax bytes.
// slog handlers write one whole line per Write.
type logRing struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

const (
	ringLines   = 5000
	ringLineMax = 4096
)

func newLogRing() *logRing { return &logRing{lines: make([]string, ringLines)} }

// Write stores p as one line (never fails).
func (r *logRing) Write(p []byte) (int, error) {
	line := p
	if len(line) > ringLineMax {
		line = append(append([]byte(nil), line[:ringLineMax]...), "…\n"...)
	}
	r.mu.Lock()
	r.lines[r.next] = string(line)
	r.next = (r.next + 1) % len(r.lines)
	r.full = r.full || r.next == 0
	r.mu.Unlock()
	return len(p), nil
}

// Last returns the newest n lines, oldest first.
func (r *logRing) Last(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []string
	if r.full {
		all = append(append(all, r.lines[r.next:]...), r.lines[:r.next]...)
	} else {
		all = append(all, r.lines[:r.next]...)
	}
	if n < len(all) {
		all = all[len(all)-n:]
	}
	return all
}

// newDaemonLogger logs at level in format ("text" or "json", slog's) to
// stderr and to ring; records logged with a request's context carry its
// request_id.
func newDaemonLogger(level, format string, ring *logRing) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	var w io.Writer = os.Stderr
	if ring != nil {
		w = io.MultiWriter(os.Stderr, ring)
	}
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(reqid.Handler{Handler: h})
}

// Logger makes the daemon's logger (--log-level, --log-format): stderr and
// the ring GET /sbx/debug/logs reads.
func (c *Config) Logger() *slog.Logger {
	c.ring = newLogRing()
	return newDaemonLogger(c.logLevel, c.obs.logFormat, c.ring)
}
