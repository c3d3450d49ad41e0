// Package proxy routes sandbox traffic arriving at the daemon's origin to a
// port inside the sandbox: by the E2b-Sandbox-Id/E2b-Sandbox-Port headers the
// SDK always sends, by a Host of the form "<port>-<id>.<domain>" (E2B's
// getHost), or — for signed upload/download URLs, which carry neither — by
// the signature itself. It authenticates before anything reaches a sandbox.
package proxy

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// EnvdPort is the agent's port; CodePort the code interpreter's.
const (
	EnvdPort = 49983
	CodePort = 49999
)

// Target is where a request goes.
type Target struct {
	ID     string
	Port   int
	ByHost bool
}

// Route extracts the target of r, if r is sandbox traffic. domain may be ""
// (then any host of the form "<port>-<id>.<anything>" routes). ok is false for
// API traffic. A malformed routing header is still sandbox traffic (err set).
func Route(r *http.Request, domain string) (t Target, ok bool, err error) {
	if id := r.Header.Get("E2b-Sandbox-Id"); id != "" || r.Header.Get("E2b-Sandbox-Port") != "" {
		t.ID = id
		t.Port = EnvdPort
		if p := r.Header.Get("E2b-Sandbox-Port"); p != "" {
			t.Port, err = parsePort(p)
		}
		if err == nil && !sandbox.ValidID(id) {
			err = errBadID
		}
		return t, true, err
	}
	if t, ok := RouteHost(r.Host, domain); ok {
		return t, true, nil
	}
	return Target{}, false, nil
}

// RouteHost parses "<port>-<id>.<domain>[:port]". domain may carry a port
// itself ("sbx.test:8443", for an origin not on 443: the SDK then builds
// URLs with it); only its host name is compared.
func RouteHost(host, domain string) (Target, bool) {
	host = stripPort(host)
	domain = stripPort(domain)
	host = strings.ToLower(host)
	label, rest, ok := strings.Cut(host, ".")
	if !ok || (domain != "" && rest != strings.ToLower(domain)) {
		return Target{}, false
	}
	ps, id, ok := strings.Cut(label, "-")
	if !ok || !sandbox.ValidID(id) {
		return Target{}, false
	}
	port, err := parsePort(ps)
	if err != nil {
		return Target{}, false
	}
	return Target{ID: id, Port: port, ByHost: true}, true
}

// stripPort returns the host name of "name[:port]".
func stripPort(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != s {
		return 0, errBadPort
	}
	return p, nil
}
