package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/eventlog"
	"github.com/sbx-dev/sbx/internal/untrusted"
)

// agentEvent is an event as an agent sends it. Everything in it is the
// sandbox's word: Store.Log bounds it, and entryOf fixes its level, logger
// and time.
type agentEvent = eventlog.Event

// agentPage is the body of the agent's GET /sbx/events.
type agentPage = eventlog.Page

// Bounds of one read of an agent's events.
const (
	agentTimeout  = 2 * time.Second
	agentMaxBody  = 1 << 20
	agentMaxBatch = 256
	// agentMaxSkew: an event claiming a time further back than this (or in
	// the future) is stamped with the time it was read.
	agentMaxSkew = 10 * time.Minute
	// agentRestMin and agentRestMax bound how long the collector leaves an
	// agent unread after a read that failed slowly (half agentTimeout or
	// more): root inside can stop the agent (gVisor delivers SIGSTOP to
	// init) or answer on its behalf, and every such read holds one of the
	// collector's agentParallel slots for agentTimeout, delaying every
	// other tenant's logs. The rest doubles with each slow failure.
	agentRestMin = 10 * time.Second
	agentRestMax = 5 * time.Minute
)

// agentLoggers are the logger names an agent may use; others read "agent".
var agentLoggers = map[string]bool{"processSvc": true, "agent": true}

// agentReader keeps, per sandbox, how far its agent's log has been read.
type agentReader struct {
	client *http.Client
	mu     sync.Mutex
	cursor map[string]agentCursor // guarded by mu
	rest   map[string]agentRest   // guarded by mu: agents left unread a while
}

// agentRest is how long an agent is left unread (see agentRestMin).
type agentRest struct {
	until time.Time
	d     time.Duration
}

type agentCursor struct {
	boot  string
	after uint64
}

func newAgentReader() *agentReader {
	return &agentReader{cursor: map[string]agentCursor{}, rest: map[string]agentRest{}, client: &http.Client{
		Timeout: agentTimeout,
		// Never follow a redirect: the agent must not steer the daemon
		// (with the sandbox's token) anywhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil,
			DialContext:            (&net.Dialer{Timeout: agentTimeout}).DialContext,
			MaxResponseHeaderBytes: untrusted.MaxHeaderBytes},
	}}
}

// read returns tg's agent's events not read yet, as log entries. Errors
// (agent busy, restarting, hostile) just mean nothing new this round.
func (a *agentReader) read(ctx context.Context, tg Target) []Entry {
	a.mu.Lock()
	cur := a.cursor[tg.ID]
	a.mu.Unlock()
	t0 := time.Now()
	page, ok := a.fetch(ctx, tg, cur.after)
	a.noteRead(tg.ID, ok || time.Since(t0) < agentTimeout/2)
	if !ok {
		return nil
	}
	if cur.boot != "" && page.Boot != cur.boot { // the agent restarted: read it again from its start
		a.setCursor(tg.ID, agentCursor{boot: page.Boot})
		return nil
	}
	out := make([]Entry, 0, len(page.Events))
	for _, ev := range page.Events[:min(len(page.Events), agentMaxBatch)] {
		if ev.Seq <= cur.after {
			continue
		}
		cur.after = ev.Seq
		out = append(out, entryOf(ev, time.Now()))
	}
	cur.boot = page.Boot
	a.setCursor(tg.ID, cur)
	return out
}

func (a *agentReader) setCursor(id string, c agentCursor) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cursor[id] = c
}

// noteRead ends id's rest after a read that was quick or succeeded, and
// starts or doubles it after one that failed slowly.
func (a *agentReader) noteRead(id string, quick bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if quick {
		delete(a.rest, id)
		return
	}
	r := a.rest[id]
	r.d = min(max(2*r.d, agentRestMin), agentRestMax)
	r.until = time.Now().Add(r.d)
	a.rest[id] = r
}

// resting reports whether the collector leaves id's agent unread now.
func (a *agentReader) resting(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return time.Now().Before(a.rest[id].until)
}

// forget drops the cursors and rests of sandboxes not in keep.
func (a *agentReader) forget(keep map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id := range a.cursor {
		if !keep[id] {
			delete(a.cursor, id)
		}
	}
	for id := range a.rest {
		if !keep[id] {
			delete(a.rest, id)
		}
	}
}

func (a *agentReader) fetch(ctx context.Context, tg Target, after uint64) (agentPage, bool) {
	var p agentPage
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tg.Agent+"/sbx/events?after="+strconv.FormatUint(after, 10), nil)
	if err != nil {
		return p, false
	}
	req.Header.Set("X-Access-Token", tg.Token)
	resp, err := a.client.Do(req)
	if err != nil {
		return p, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return p, false
	}
	if json.NewDecoder(io.LimitReader(resp.Body, agentMaxBody)).Decode(&p) != nil || len(p.Boot) > 64 {
		return agentPage{}, false
	}
	return p, true
}

// entryOf turns ev into a log entry read at now.
func entryOf(ev agentEvent, now time.Time) Entry {
	lvl, ok := ParseLevel(ev.Level)
	if !ok {
		lvl = Info
	}
	logger := ev.Logger
	if !agentLoggers[logger] {
		logger = "agent"
	}
	t := ev.Time
	if t.After(now) || t.Before(now.Add(-agentMaxSkew)) {
		t = now
	}
	return Entry{Time: t.UTC(), Level: lvl, Logger: logger, Message: ev.Message, Fields: ev.Fields}
}

// Drain reads what sandbox id's agent logged since it was last read
// (sandbox.EventDrainer), before the sandbox is killed.
func (s *Store) Drain(ctx context.Context, id, agentURL, token string) {
	for _, e := range s.agents.read(ctx, Target{ID: id, Agent: agentURL, Token: token}) {
		s.Log(id, e)
	}
}
