package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Stalled agents. An agent that lives but does not answer (root inside
// stopped it: gVisor delivers SIGSTOP to init; or it is wedged) still
// completes TCP handshakes (the sandbox's netstack, or the kernel, holds its
// listener's queue), so a request to it would wait for its response header
// as long as its client waits: forever for one without a timeout. A late
// header alone is no sign (an upload is answered after its body, a Connect
// stream's header may wait for its first message), so a request to the
// agent's ports (EnvdPort, CodePort) that has had no header for
// Stall.After makes the proxy ask the agent's /health on a connection of
// its own. Only when Stall.Probes probes in a row each get no answer
// within Stall.Probe does the request fail: 502 "sandbox port is not
// reachable: the sandbox's agent is not responding …", logged and counted
// (Unresponsive). An agent that answers /health, however slowly within the
// bound, is waited for: a false failure under load is worse than a slow
// answer. The sandbox itself is never killed for it: its timeout, a kill
// and a pause end it as any other.
//
// Once a request has been given up, the proxy remembers the agent as
// stalled (Proxy.stalled) until a probe or a request of it is answered: the
// next request to it probes at once and fails after one unanswered probe
// (Stall.Probe, not the whole 30 s again).

// Stall bounds how long a request to a silent agent waits (see above).
type Stall struct {
	After  time.Duration // without a response header before the first probe
	Probe  time.Duration // each probe's bound
	Probes int           // unanswered probes in a row that fail the request
}

// DefaultStall fails a request to an agent that has answered neither it
// nor /health after 10 s + 2 × 10 s = 30 s, under the SDKs' own 60 s
// request timeout.
var DefaultStall = Stall{After: 10 * time.Second, Probe: 10 * time.Second, Probes: 2}

// ErrAgentUnresponsive fails a request whose agent answered neither it nor
// its /health probes (see above).
var ErrAgentUnresponsive = errors.New("the sandbox's agent is not responding")

// stallWatch is the proxy's transport for requests to the agent's ports:
// it fails their round trip when the agent does not answer (see above).
type stallWatch struct {
	http.RoundTripper
	p *Proxy
}

// Round-trip states: who ended the wait for the response header.
const (
	waiting int32 = iota
	answered
	givenUp
)

func (s stallWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	id, ok := agentTarget(r.URL.Host)
	if !ok || s.p.stall.After <= 0 {
		return s.RoundTripper.RoundTrip(r)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	var state atomic.Int32
	done := make(chan struct{})
	go s.p.watchStall(ctx, done, id, &state, cancel)
	resp, err := s.RoundTripper.RoundTrip(r.WithContext(ctx))
	close(done)
	if err == nil && state.CompareAndSwap(waiting, answered) {
		s.p.stalled.Delete(id)
		resp.Body = &cancelOnClose{resp.Body, cancel}
		return resp, nil
	}
	if err == nil {
		resp.Body.Close() // given up as it came: the context is cancelled
	}
	cancel(nil)
	if cause := context.Cause(ctx); errors.Is(cause, ErrAgentUnresponsive) {
		return nil, cause
	}
	return nil, err
}

// agentTarget is the sandbox id of an upstream host "<id>-<epoch>.sandbox:<port>"
// when port is one of the agent's.
func agentTarget(hostport string) (string, bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || (port != strconv.Itoa(EnvdPort) && port != strconv.Itoa(CodePort)) {
		return "", false
	}
	id, _, _ := strings.Cut(strings.TrimSuffix(host, upstreamSuffix), "-")
	return id, id != ""
}

// watchStall probes sandbox id's agent while the round trip waits for its
// header (until done), and gives the round trip up once Probes probes in a
// row went unanswered.
func (p *Proxy) watchStall(ctx context.Context, done <-chan struct{}, id string, state *atomic.Int32, cancel context.CancelCauseFunc) {
	after, limit := p.stall.After, p.stall.Probes
	if _, known := p.stalled.Load(id); known {
		after, limit = 0, 1
	}
	t := time.NewTimer(after)
	defer t.Stop()
	start, failed := time.Now(), 0
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := p.probeShared(done, id)
		switch {
		case errors.Is(err, errNoProbe):
			return
		case err == nil:
			p.stalled.Delete(id)
			failed, limit = 0, p.stall.Probes
			t.Reset(p.stall.After)
			continue
		}
		if failed++; failed < limit {
			t.Reset(0)
			continue
		}
		if state.CompareAndSwap(waiting, givenUp) {
			p.unresponsive.Add(1)
			p.stalled.Store(id, struct{}{})
			cancel(fmt.Errorf("%w: no answer to the request for %v nor to %d health probes of %v each (stopped or wedged; the sandbox still runs)",
				ErrAgentUnresponsive, time.Since(start).Round(time.Second), failed, p.stall.Probe))
		}
		return
	}
}

// errNoProbe: the round trip ended, or its sandbox did, before a probe's
// answer.
var errNoProbe = errors.New("no probe")

// cancelOnClose cancels the round trip's context once its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel(nil)
	return err
}

// SetStall replaces DefaultStall (before serving; After 0: no watch).
func (p *Proxy) SetStall(s Stall) { p.stall = s }

// Unresponsive is how many requests failed because their sandbox's agent
// answered neither them nor its health probes (sbx_proxy_agent_unresponsive_total).
func (p *Proxy) Unresponsive() int64 { return p.unresponsive.Load() }
