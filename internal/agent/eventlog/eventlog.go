// Package eventlog is the agent's bounded log of what it did: each process
// it started and how that ended, and its own log lines. The daemon reads it
// over the agent's authenticated link (GET /sbx/events) into the sandbox's
// log (package telemetry), where it is bounded and cleaned again: nothing
// the sandbox says is trusted.
package eventlog

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Event is one entry; Seq numbers them from 1 within one Boot.
type Event struct {
	Seq     uint64            `json:"seq"`
	Time    time.Time         `json:"time"`
	Level   string            `json:"level"`
	Logger  string            `json:"logger"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// Page is the body of GET /sbx/events: the events after the asked sequence
// number, and Boot, which changes when the agent restarts (sequence numbers
// start again).
type Page struct {
	Boot   string  `json:"boot"`
	Events []Event `json:"events"`
}

// Log is a ring of the last Cap events. It is safe for concurrent use.
type Log struct {
	boot string
	mu   sync.Mutex
	buf  []Event // ring; guarded by mu
	next uint64  // sequence number of the next event; guarded by mu
}

// Cap is how many events the agent keeps: the daemon polls every few
// seconds, older ones are dropped if it falls behind.
const Cap = 512

// MaxPage bounds the events of one GET /sbx/events answer.
const MaxPage = 256

// New returns an empty log with a fresh boot id.
func New() *Log {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Log{boot: hex.EncodeToString(b), buf: make([]Event, 0, Cap), next: 1}
}

// Add appends an event stamped now.
func (l *Log) Add(level, logger, msg string, fields map[string]string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := Event{Seq: l.next, Time: time.Now().UTC(), Level: level, Logger: logger, Message: msg, Fields: fields}
	l.next++
	if len(l.buf) < Cap {
		l.buf = append(l.buf, e)
		return
	}
	l.buf[(e.Seq-1)%Cap] = e
}

// After returns at most MaxPage events with Seq > after, oldest first.
func (l *Log) After(after uint64) Page {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := Page{Boot: l.boot, Events: []Event{}}
	first := uint64(1)
	if l.next > Cap {
		first = l.next - Cap
	}
	for seq := max(after+1, first); seq < l.next && len(p.Events) < MaxPage; seq++ {
		p.Events = append(p.Events, l.buf[(seq-1)%Cap])
	}
	return p
}

// ServeHTTP answers GET /sbx/events?after=N.
func (l *Log) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	after, err := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	if err != nil && r.URL.Query().Get("after") != "" {
		http.Error(w, "after must be a sequence number", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(l.After(after))
}
