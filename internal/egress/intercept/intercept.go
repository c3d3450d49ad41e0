// Package intercept is the header-injection path of E2B's network rules:
// for a connection the egress guard admitted to a name that has rules, it
// speaks HTTP/1.1 to the sandbox itself (terminating TLS with a leaf of the
// daemon's CA for that one name), sets the rule's headers on each request,
// resolving secret placeholders at that moment, and forwards the request to
// the address the guard checked, verifying the real server's certificate.
// Connections to names without rules never come here: they stay end to end.
package intercept

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/egress/rules"
)

// Interceptor serves intercepted connections. CA, Rules and Secret are
// required; the others may be nil.
type Interceptor struct {
	CA *CA
	// Rules returns a sandbox's current rules and team; ok false for an
	// unknown sandbox. Called per connection and again per request, so an
	// updateNetwork applies to the next request.
	Rules func(sandbox string) (set rules.Set, team string, ok bool)
	// Secret opens team's secret name at request time.
	Secret func(ctx context.Context, team, name string) (string, error)
	// RootCAs verifies upstream servers; nil: the system roots.
	RootCAs *x509.CertPool
	// Dial opens the upstream connection; nil: a direct dial.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Used is told, once per connection and rule set, which secrets were
	// put into requests to host (names only: the audit record).
	Used func(sandbox, host string, names []string)
	Log  *slog.Logger
}

// handshakeTimeout bounds the sandbox-side TLS handshake.
const handshakeTimeout = 10 * time.Second

// Handle serves c if name has rules for sandbox sb and reports whether it
// did; false leaves c untouched (the guard forwards it as usual). peeked
// are the bytes the guard read (a ClientHello or an HTTP request head);
// dst is the destination the guard admitted. The caller closes c.
func (ic *Interceptor) Handle(ctx context.Context, c net.Conn, sb, name string, dst netip.AddrPort, peeked []byte) bool {
	return ic.HandleVia(ctx, c, sb, name, dst, peeked, nil)
}

// HandleVia is Handle with the upstream connection opened by dial instead
// of Dial (an egress proxy's tunnel: dial ignores its address and reaches
// name through the sandbox's proxy); nil dial is Handle.
func (ic *Interceptor) HandleVia(ctx context.Context, c net.Conn, sb, name string, dst netip.AddrPort, peeked []byte,
	dial func(ctx context.Context, network, addr string) (net.Conn, error)) bool {
	set, _, ok := ic.Rules(sb)
	if !ok || len(peeked) == 0 {
		return false
	}
	if _, match := set.Match(name); !match {
		return false
	}
	raw := newBatchConn(&prefixConn{Conn: c, prefix: peeked})
	var conn net.Conn = raw
	out := batchGates{raw}
	tlsOn := peeked[0] == 0x16
	if tlsOn {
		tc := tls.Server(raw, ic.serverTLS(name))
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			ic.log().Info("egress intercept: sandbox handshake", "sandbox", sb, "name", name, "err", err)
			return true
		}
		top := newBatchConn(tc) // net/http then sees no *tls.Conn: it needs none
		conn, out = top, batchGates{top, raw}
	}
	ic.serveHTTP(ctx, conn, &session{ic: ic, sb: sb, name: name, dst: dst, tls: tlsOn, dial: dial, out: out})
	return true
}

// serverTLS presents name's leaf (the guard checked the SNI is name) and
// offers only HTTP/1.1, so no HTTP/2 connection can be reused for another
// origin (coalescing). Records are full-size from the first byte: the
// small opening records of dynamic sizing are for browsers on lossy links,
// and inside gVisor each record costs the client a read.
func (ic *Interceptor) serverTLS(name string) *tls.Config {
	return &tls.Config{
		MinVersion:                  tls.VersionTLS12,
		NextProtos:                  []string{"http/1.1"},
		DynamicRecordSizingDisabled: true,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return ic.CA.Leaf(name)
		},
	}
}

// serveHTTP runs an HTTP/1.1 server on conn until the client or ctx ends
// it, and waits for its handlers (a WebSocket runs inside one).
func (ic *Interceptor) serveHTTP(ctx context.Context, conn net.Conn, s *session) {
	ln := newOneConnListener(ctx, conn)
	tr := s.transport()
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			wg.Add(1)
			defer wg.Done()
			s.serve(w, r, tr)
		}),
		ConnState:         ln.connState,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // no h2
		ErrorLog:          discardLog,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	_ = srv.Serve(ln)
	wg.Wait()
}

func (ic *Interceptor) log() *slog.Logger {
	if ic.Log != nil {
		return ic.Log
	}
	return slog.Default()
}

// upstreamURLHost is name with dst's port when it is not the scheme's.
func upstreamURLHost(name string, port uint16, tlsOn bool) string {
	if tlsOn && port == 443 || !tlsOn && port == 80 {
		return name
	}
	return net.JoinHostPort(name, strconv.Itoa(int(port)))
}
