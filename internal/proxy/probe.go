package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/sbx-dev/sbx/internal/untrusted"
)

// probeClient asks agents' /health for watchStall: a connection of its own
// per probe (a pooled one may be the stalled one), the header bounded as
// every sandbox answer's, a redirect an answer (never followed).
var probeClient = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true, MaxResponseHeaderBytes: untrusted.MaxHeaderBytes},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// probes shares one probe of a sandbox's agent among the requests that wait
// on it, so a hundred stalled requests cost the agent one probe at a time.
// mu guards calls.
type probes struct {
	mu    sync.Mutex
	calls map[string]*probeCall // by sandbox id
}

type probeCall struct {
	done chan struct{}
	err  error
}

// probeShared waits for a probe of sandbox id's agent (joining one under
// way); errNoProbe if the sandbox is gone or stop closes first.
func (p *Proxy) probeShared(stop <-chan struct{}, id string) error {
	p.probes.mu.Lock()
	c, ok := p.probes.calls[id]
	if !ok {
		in, err := p.sbx.Get(id)
		if err != nil || in.AgentAddr == "" {
			p.probes.mu.Unlock()
			p.stalled.Delete(id) // gone: forget it
			return errNoProbe
		}
		c = &probeCall{done: make(chan struct{})}
		if p.probes.calls == nil {
			p.probes.calls = map[string]*probeCall{}
		}
		p.probes.calls[id] = c
		go p.runProbe(id, in.AgentAddr, c)
	}
	p.probes.mu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-stop:
		return errNoProbe
	}
}

// runProbe asks the agent at agentAddr for /health within Stall.Probe: any
// answer is life. A failure is logged (once per probe, however many
// requests wait on it).
func (p *Proxy) runProbe(id, agentAddr string, c *probeCall) {
	defer func() {
		p.probes.mu.Lock()
		delete(p.probes.calls, id)
		p.probes.mu.Unlock()
		close(c.done)
	}()
	ip, port, _ := net.SplitHostPort(agentAddr)
	if p.testPort != 0 {
		port = strconv.Itoa(p.testPort)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.stall.Probe)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, port)+"/health", nil)
	resp, err := probeClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // not the agent's address
		}
		c.err = err
		p.log.Warn("sandbox agent does not answer /health while a request waits for it", "sandbox", id, "bound", p.stall.Probe, "err", upstreamErr(err))
		return
	}
	resp.Body.Close()
}
