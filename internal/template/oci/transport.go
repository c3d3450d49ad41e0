package oci

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// stallTransport is the HTTP transport of one pull: dialing, the TLS
// handshake and the wait for response headers are each bounded by the
// stall timeout, and a response body that delivers nothing for the stall
// timeout while being read is cut off with errStalled.
type stallTransport struct {
	base  *http.Transport
	stall time.Duration
	check func(*http.Request) error // the Guard's on proxied requests (nil: none)
}

func (p *Puller) transport() *stallTransport {
	d := p.stall()
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = p.dial(d)
	t.TLSHandshakeTimeout = d
	t.ResponseHeaderTimeout = d
	check := func(req *http.Request) error { return p.checkProxied(req, t.Proxy) }
	return &stallTransport{base: t, stall: d, check: check}
}

// closeIdle drops the pull's kept-alive connections.
func (t *stallTransport) closeIdle() { t.base.CloseIdleConnections() }

// RoundTrip implements http.RoundTripper.
func (t *stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.check != nil {
		if err := t.check(req); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	b := &stallBody{rc: resp.Body, cancel: cancel, stall: t.stall}
	b.timer = time.AfterFunc(time.Hour, b.fire)
	b.timer.Stop()
	resp.Body = b
	return resp, nil
}

// stallBody is a response body watched while a Read waits.
type stallBody struct {
	rc      io.ReadCloser
	cancel  context.CancelFunc
	stall   time.Duration
	timer   *time.Timer
	stalled atomic.Bool
}

func (b *stallBody) fire() {
	b.stalled.Store(true)
	b.cancel()
}

func (b *stallBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.stall)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	if err != nil && b.stalled.Load() {
		return n, errStalled
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel()
	return err
}
