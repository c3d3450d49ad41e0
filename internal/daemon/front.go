package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/front"
	"github.com/sbx-dev/sbx/internal/store"
)

// checkRole validates --role: node (the default) or api, which needs
// --cluster; and --front-listen, which makes a cluster node play both.
func (f *Config) checkRole() error {
	switch f.role {
	case "node":
		if f.frontListen != "" && f.cluster.url == "" {
			return errors.New("--front-listen needs --cluster (or $SBX_CLUSTER_URL): it serves the cluster's API front")
		}
		return nil
	case "api":
		if f.cluster.url == "" {
			return errors.New("--role api needs --cluster (or $SBX_CLUSTER_URL)")
		}
		if f.frontListen != "" {
			return errors.New("--front-listen is for a node (--role node); the front of --role api listens on --listen")
		}
		return nil
	}
	return fmt.Errorf("--role %q: want node or api", f.role)
}

// serveFront runs the stateless API front (--role api): no runtimes, no
// data dir, only the shared store, until ctx ends.
func serveFront(ctx context.Context, f *Config, log *slog.Logger) error {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := store.OpenPostgres(octx, f.cluster.url)
	if err != nil {
		return err
	}
	defer st.Close()
	return runFront(ctx, st, f, f.listen, log)
}

// runFront serves the API front on addr over dir until ctx ends or the
// listener fails.
func runFront(ctx context.Context, dir front.Directory, f *Config, addr string, log *slog.Logger) error {
	b, err := frontServer(dir, f, addr, log)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- b.srv.Serve(b.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return shutdown(b.srv)
}

// frontServer listens on addr with a front over dir (the shared store; a
// node's own fenced store will do: the front reads only the node registry
// and sandbox owners, which no fence scopes).
func frontServer(dir front.Directory, f *Config, addr string, log *slog.Logger) (*boundServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	fr := front.New(dir, f.domain, api.WriteError, log)
	fr.Sign = f.cluster.signer
	log.Info("sbx API front serving", "listen", ln.Addr().String())
	// bounded as a node's listeners (with them, on a node playing both
	// roles): before, one address's 1,100 idle connections took a front
	// limited to 1,024 descriptors to EMFILE, and no client was served
	return &boundServer{newHTTPServer(fr, defaultLimits), f.clientConns().wrap(ln)}, nil
}

func shutdown(srv *http.Server) error {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// startNodeFront serves the API front beside a node's own API when
// --front-listen is set (a node daemon playing both roles), over the
// node's store, until the returned stop. A listener that cannot be
// opened is an error here; one that fails later is logged.
func (d *Daemon) startNodeFront() (stop func(), err error) {
	if d.cfg.frontListen == "" {
		return func() {}, nil
	}
	b, err := frontServer(d.st, d.cfg, d.cfg.frontListen, d.log)
	if err != nil {
		return nil, fmt.Errorf("--front-listen: %w", err)
	}
	go func() {
		if err := b.srv.Serve(b.ln); !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("API front listener stopped", "err", err)
		}
	}()
	return func() { _ = shutdown(b.srv) }, nil
}
