package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/dashboard"
)

// dashboardHandler is the web dashboard (/dashboard) over the API handler
// apiH and, for commands and files, a client of self (as /mcp is),
// authenticated with the session's key.
func dashboardHandler(self *selfAPI, apiH http.Handler, auth dashboard.Authenticator, log *slog.Logger) http.Handler {
	return dashboard.New(dashboard.Config{API: apiH, Auth: auth,
		Sandboxes: selfConnector{base: self.base, rt: self.rt}, Log: log})
}

// selfConnector opens sandbox traffic through the daemon's own listener.
type selfConnector struct {
	base string
	rt   http.RoundTripper
}

// Conn looks the sandbox up with key (another team's is not found, as the
// API answers) and connects with its access token; it never resumes a
// paused sandbox.
func (c selfConnector) Conn(ctx context.Context, key, id string) (*client.SandboxConn, error) {
	cl := client.New(c.base, key, client.WithUserAgent("sbx-dashboard"), client.WithHTTPClient(&http.Client{Transport: c.rt}))
	d, err := cl.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.State != "running" || d.EnvdAccessToken == "" {
		return nil, fmt.Errorf("%w: sandbox %s is %s", client.ErrConflict, id, d.State)
	}
	return cl.SandboxByID(id, d.EnvdAccessToken), nil
}

// loopback turns a listen address with an unspecified host (":3000",
// "0.0.0.0:3000", "[::]:3000") into one a local client can dial.
func loopback(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
