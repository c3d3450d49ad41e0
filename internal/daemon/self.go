package daemon

import (
	"errors"
	"net/http"
)

// selfAPI is how the daemon's own clients of the API (/mcp's tools, the
// dashboard's listings, files and terminals) reach it. A single node calls
// its own listener. A cluster node calls an API front of its own on
// loopback, over the cluster's store, so they see and reach every node's
// sandboxes as a client of the cluster's front does (before, only this
// node's: another node's sandbox was "not found"); that front signs what
// it forwards when the node has the cluster secret, as any front.
type selfAPI struct {
	base string            // the URL its clients call
	rt   http.RoundTripper // their transport
	api  http.Handler      // the REST API in process for the dashboard; nil: the node's own
	stop func()
}

// startSelfAPI returns the node's selfAPI, serving the loopback front of a
// cluster node until stop.
func (d *Daemon) startSelfAPI() (*selfAPI, error) {
	rt := http.DefaultTransport.(*http.Transport).Clone()
	if d.cfg.cluster.url == "" {
		return &selfAPI{base: "http://" + loopback(d.cfg.listen), rt: rt, stop: func() {}}, nil
	}
	b, err := frontServer(d.st, d.cfg, "127.0.0.1:0", d.log.With("for", "/mcp and /dashboard"))
	if err != nil {
		return nil, err
	}
	go func() {
		if err := b.srv.Serve(b.ln); !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("the loopback API front of /mcp and /dashboard stopped", "err", err)
		}
	}()
	return &selfAPI{base: "http://" + b.ln.Addr().String(), rt: rt, api: b.srv.Handler,
		stop: func() { _ = shutdown(b.srv) }}, nil
}
