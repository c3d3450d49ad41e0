package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/front"
	"github.com/sbx-dev/sbx/internal/store"
)

// checkRole validates --role: node (the default) or api, which needs
// --cluster.
func (f *Config) checkRole() error {
	switch f.role {
	case "node":
		return nil
	case "api":
		if f.cluster.url == "" {
			return errors.New("--role api needs --cluster (or $SBX_CLUSTER_URL)")
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
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	fr := front.New(st, f.domain, api.WriteError, log)
	fr.Sign = f.cluster.signer
	srv := newHTTPServer(fr, defaultLimits)
	log.Info("sbx API front serving", "listen", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
