package intercept

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/secrets"
	"github.com/sbx-dev/sbx/internal/untrusted"
)

// session is one intercepted connection: its sandbox, the one name it may
// speak to (the SNI or first Host the guard checked), and the address the
// guard admitted.
type session struct {
	ic   *Interceptor
	sb   string
	name string
	dst  netip.AddrPort
	tls  bool
	dial func(ctx context.Context, network, addr string) (net.Conn, error) // nil: ic.Dial
	out  batchGates                                                        // the sandbox side's batching, outermost first

	mu      sync.Mutex
	audited map[string]bool // secret name lists already reported to Used
}

// transport dials only s.dst and verifies the upstream certificate for
// s.name; it speaks HTTP/1.1 only and follows no redirects (a 3xx goes back
// to the client, so an injected header never follows it to another host).
func (s *session) transport() *http.Transport {
	dial := s.ic.Dial
	if s.dial != nil {
		dial = s.dial
	}
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, egress.UpstreamDialTimeout) // a dead upstream: 502
			defer cancel()
			return dial(ctx, "tcp", s.dst.String())
		},
		TLSClientConfig: &tls.Config{ServerName: s.name, RootCAs: s.ic.RootCAs,
			NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12},
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		ForceAttemptHTTP2:   false,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		// the upstream is whatever server the sandbox names: its header is
		// read as a sandbox server's is (502 past it)
		MaxResponseHeaderBytes: untrusted.MaxHeaderBytes,
	}
}

// serve checks one request is for s.name, sets the rule's headers with
// their secrets resolved now, and forwards it. Answers made here are fixed
// text plus names: never a request header or a secret.
func (s *session) serve(w http.ResponseWriter, r *http.Request, tr *http.Transport) {
	if r.Method == http.MethodConnect || r.RequestURI == "*" || r.URL.IsAbs() {
		http.Error(w, "sbx egress: only origin-form requests are forwarded", http.StatusMethodNotAllowed)
		return
	}
	if echoes(r.Method) {
		http.Error(w, "sbx egress: TRACE and TRACK are not forwarded", http.StatusMethodNotAllowed)
		return
	}
	if h := hostOnly(r.Host); h != s.name {
		http.Error(w, "sbx egress: this connection is for "+s.name+"; open a new one for another host", http.StatusMisdirectedRequest)
		return
	}
	if err := s.inject(r); err != nil {
		s.ic.log().Info("egress intercept: request refused", "sandbox", s.sb, "name", s.name, "err", err)
		http.Error(w, "sbx egress: "+err.Error(), http.StatusBadGateway)
		return
	}
	s.proxy(tr).ServeHTTP(w, r)
}

// inject sets the headers of the sandbox's current rule for s.name.
// A missing secret fails the request closed (nothing is forwarded).
func (s *session) inject(r *http.Request) error {
	set, team, ok := s.ic.Rules(s.sb)
	if !ok {
		return errors.New("sandbox gone")
	}
	hs, _ := set.Match(s.name)
	var used []string
	for _, h := range hs {
		v, err := secrets.Expand(h.Value, func(n string) (string, error) {
			used = append(used, n)
			return s.ic.Secret(r.Context(), team, n)
		})
		if err != nil {
			return errors.New("network rule for " + s.name + ": " + errText(err))
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return errors.New("network rule for " + s.name + ": header " + h.Name + ": a secret holds CR, LF or NUL")
		}
		r.Header.Set(h.Name, v)
	}
	s.audit(used)
	return nil
}

// errText is err's message when it is a secret-not-found (which names the
// secret), else a fixed text: no other error text reaches the sandbox.
func errText(err error) string {
	if errors.Is(err, secrets.ErrNotFound) {
		return err.Error()
	}
	return "a secret could not be read"
}

func (s *session) audit(names []string) {
	if s.ic.Used == nil || len(names) == 0 {
		return
	}
	key := strings.Join(names, ",")
	s.mu.Lock()
	first := !s.audited[key]
	if s.audited == nil {
		s.audited = map[string]bool{}
	}
	s.audited[key] = true
	s.mu.Unlock()
	if first {
		s.ic.Used(s.sb, s.name, names)
	}
}

// proxy forwards to s.name at s.dst. Rewrite (not Director): no
// X-Forwarded-* headers are added; hop-by-hop headers are dropped; the Host
// the client sent (checked equal to s.name) is kept.
func (s *session) proxy(tr *http.Transport) *httputil.ReverseProxy {
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	host := upstreamURLHost(s.name, s.dst.Port(), s.tls)
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = scheme, host
			pr.Out.Host = pr.In.Host
		},
		Transport:      tr,
		ModifyResponse: s.batchBody,
		BufferPool:     copyBuffers,
		ErrorLog:       discardLog,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			s.ic.log().Info("egress intercept: upstream", "sandbox", s.sb, "name", s.name, "err", err)
			http.Error(w, "sbx egress: upstream "+s.name+" failed: "+upstreamErr(err), http.StatusBadGateway)
		},
	}
}

// batchBody reads a response body ahead (see readahead) so that the proxy
// copies it in batches of what has arrived, and the sandbox side gathers
// each batch into full TLS records and large writes (batchConn); a 101's
// body is the upgraded connection and stays as it is.
func (s *session) batchBody(res *http.Response) error {
	if res.StatusCode != http.StatusSwitchingProtocols && res.Body != nil && res.Body != http.NoBody {
		res.Body = newReadahead(res.Body, s.out)
	}
	return nil
}

// upstreamErr names the class of an upstream failure without echoing
// anything of the request.
func upstreamErr(err error) string {
	var cv *tls.CertificateVerificationError
	switch {
	case errors.As(err, &cv):
		return "its certificate did not verify"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "connection error"
}

// echoes reports whether method makes a server that implements it answer
// with the request it got, the injected headers included (TRACE, and IIS's
// TRACK; methods are matched in any case, as some servers do).
func echoes(method string) bool {
	return strings.EqualFold(method, http.MethodTrace) || strings.EqualFold(method, "TRACK")
}

// hostOnly is a Host header's name: lower case, no port, no trailing dot.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// discardLog swallows net/http's own error lines (they may quote requests).
var discardLog = log.New(io.Discard, "", 0)
