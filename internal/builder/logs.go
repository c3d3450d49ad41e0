package builder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sbx-dev/sbx/internal/untrusted"
)

// LogEntry is one line of a build's log, as E2B's BuildLogEntry.
type LogEntry struct {
	Timestamp time.Time `json:"timestamp"`
	Level     string    `json:"level"` // debug, info, warn, error
	Message   string    `json:"message"`
	Step      string    `json:"step,omitempty"`
}

// maxLogEntries and maxLogBytes bound one build's log (later entries are
// dropped, with a note): a step printing without end fills neither the
// daemon's memory nor the disk.
const (
	maxLogEntries = 20000
	maxLogBytes   = 4 << 20
)

// buildLog is the log of one build: in memory while the daemon runs and
// appended to <dir>/<build>.log (JSON lines) so it survives a restart.
// mu guards entries and f.
type buildLog struct {
	mu      sync.Mutex
	entries []LogEntry
	bytes   int
	written int64 // bytes appended to f
	f       *os.File
	dropped bool
}

func openLog(dir, buildID string) (*buildLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, buildID+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &buildLog{f: f}, nil
}

// readLog loads a finished build's log from disk (missing: empty).
func readLog(dir, buildID string) []LogEntry {
	f, err := os.Open(filepath.Join(dir, buildID+".log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []LogEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e LogEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// add appends one entry (the message is cut at 8 KiB, made one clean line
// by printableLine).
func (l *buildLog) add(level, step, format string, args ...any) {
	if l.full() {
		return // past the limit a line costs no formatting (a step printing millions)
	}
	msg := printableLine(fmt.Sprintf(format, args...), 8<<10)
	e := LogEntry{Timestamp: time.Now().UTC(), Level: level, Message: msg, Step: step}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) >= maxLogEntries || l.bytes+len(msg) > maxLogBytes {
		if !l.dropped {
			l.dropped = true
			l.entries = append(l.entries, LogEntry{Timestamp: e.Timestamp, Level: "warn", Message: "log limit reached: further output is dropped"})
		}
		return
	}
	l.entries = append(l.entries, e)
	l.bytes += len(msg)
	if l.f != nil {
		b, _ := json.Marshal(e)
		n, _ := l.f.Write(append(b, '\n'))
		l.written += int64(n)
	}
}

// printableLine is s as text a terminal shows and does not obey: invalid
// UTF-8 and every control character but tab (ESC of escape sequences, CR,
// BEL, C1) become U+FFFD. The log is a build step's output, read by `sbx
// template build` and SDK build loggers that print it to a terminal, where
// an OSC 52 would write the reader's clipboard or a CSI repaint the screen.
// Past n bytes it is cut on a rune boundary and marked with "…".
func printableLine(s string, n int) string {
	s, cut := untrusted.Cut(untrusted.Text(s, "\t", utf8.RuneError), n)
	if cut {
		s += "…"
	}
	return s
}

// full reports whether the log reached its limit and drops what comes.
func (l *buildLog) full() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

func (l *buildLog) snapshot() []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LogEntry(nil), l.entries...)
}

// size is how many bytes the log's file holds (of this run's entries).
func (l *buildLog) size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written
}

func (l *buildLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// lineWriter turns a step's output into log entries, one per line.
type lineWriter struct {
	log   *buildLog
	step  string
	level string
	buf   []byte
}

// Write logs each line p completes. It reads the output once: a line is
// found from where the last one ended, never by copying what is left (a
// chunk of the agent's is 32 KiB, and a step printing empty lines made that
// quadratic: 0.1–0.8 s of the daemon's CPU per chunk).
func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	rest := w.buf
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		w.log.add(w.level, w.step, "%s", bytes.TrimRight(rest[:i], "\r"))
		rest = rest[i+1:]
	}
	w.buf = append(w.buf[:0], rest...)
	if len(w.buf) > 8<<10 {
		w.flush()
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.log.add(w.level, w.step, "%s", string(w.buf))
		w.buf = nil
	}
}
