package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Prober is implemented by runtimes that can check their binary still works
// (oci: `<runtime> --version`). Found by type assertion.
type Prober interface {
	Probe(ctx context.Context) error
}

// healthTTL bounds how often Health probes the runtimes: /health is
// unauthenticated and must not let anyone fork runtime binaries at will.
const healthTTL = 5 * time.Second

// probeTimeout bounds one runtime probe: a hanging binary is unhealthy.
const probeTimeout = 2 * time.Second

// healthCache holds the last probe results. mu guards every field and is
// held during a probe, so concurrent callers share one.
type healthCache struct {
	mu   sync.Mutex
	at   time.Time
	last map[string]error
}

// Health reports every runtime of the node: nil when it works, else why not.
// Runtimes that failed at start (Config.Unavailable) are included. Results
// are cached for healthTTL.
func (m *Manager) Health(ctx context.Context) map[string]error {
	h := &m.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil || time.Since(h.at) > healthTTL {
		// A caller that goes away must not cache its cancellation as a
		// failing runtime.
		h.last, h.at = m.probeRuntimes(context.WithoutCancel(ctx)), time.Now()
	}
	out := make(map[string]error, len(h.last))
	for k, v := range h.last {
		out[k] = v
	}
	return out
}

// probeRuntimes probes every configured runtime concurrently.
func (m *Manager) probeRuntimes(ctx context.Context) map[string]error {
	out := map[string]error{}
	for name, reason := range m.cfg.Unavailable {
		out[name] = errors.New(reason)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, rt := range m.runtimes {
		p, ok := rt.(Prober)
		if !ok {
			out[name] = nil
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			err := p.Probe(pctx)
			mu.Lock()
			out[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
