package proxy

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/envdsig"
	"github.com/sbx-dev/sbx/internal/fdlimit"
	"github.com/sbx-dev/sbx/internal/ratelimit"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/untrusted"
)

var (
	errBadID   = errors.New("malformed sandbox id")
	errBadPort = errors.New("malformed sandbox port")
)

// Sandboxes is what the proxy needs from the manager.
type Sandboxes interface {
	Get(id string) (sandbox.Info, error)
	List() []sandbox.Info
	// AutoResume resumes a paused sandbox that asked for it (autoResume)
	// and returns it running; it fails wrapping sandbox.ErrConflict if the
	// sandbox is paused without autoResume.
	AutoResume(ctx context.Context, id string) (sandbox.Info, error)
	// AdoptMovedTraffic takes over paused sandbox id from a cluster node
	// that is gone, when its image is on this node's shared storage
	// (sandbox.Manager.AdoptMovedTraffic); else an error.
	AdoptMovedTraffic(ctx context.Context, id string) error
}

// ErrorWriter writes a JSON {code, message} error (the API's format).
type ErrorWriter func(w http.ResponseWriter, status int, msg string)

// Proxy forwards sandbox traffic. It never buffers streams.
type Proxy struct {
	sbx    Sandboxes
	domain string
	fail   ErrorWriter
	rp     *httputil.ReverseProxy
	tr     *http.Transport // rp's, under memBody
	log    *slog.Logger
	obs    Observer         // SetObserver; nil: none
	open   *fdlimit.Counter // requests in flight (limit.go); SetLimits, else unlimited
	// authLim bounds failed authentications per remote address
	// (authlimit.go).
	authLim *ratelimit.Limiter

	stall        Stall        // stall.go; SetStall, else DefaultStall
	probes       probes       // probe.go
	unresponsive atomic.Int64 // requests failed by stall.go
	stalled      sync.Map     // sandbox id → struct{}: agents given up on and not heard from since (stall.go)

	testPort int // tests: dial this port instead of the routed one
}

// New returns a proxy. domain is the sandbox domain for Host routing ("" =
// any domain).
func New(sbx Sandboxes, domain string, fail ErrorWriter, log *slog.Logger) *Proxy {
	p := &Proxy{sbx: sbx, domain: domain, fail: fail, log: log, open: fdlimit.NewCounter(Limits{}), stall: DefaultStall,
		authLim: ratelimit.New(authFailRate, authFailBurst)}
	p.tr = &http.Transport{
		DialContext:         p.dial,
		MaxIdleConnsPerHost: 16,
		// one pool per sandbox port: bounded in all (SetLimits)
		MaxIdleConns:          Idle(Limits{}),
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 0, // streams (Start, WatchDir, execute) may take long for headers
		// 502 past it: a request may wait for it without a timeout
		MaxResponseHeaderBytes: untrusted.MaxHeaderBytes,
		// network.httpsPorts: the sandbox's own certificate, commonly
		// self-signed, is not verified (as E2B's proxy does not): the hop is
		// the host's veth to the sandbox, and the sandbox is the party TLS
		// would authenticate, not one it protects against (docs/SECURITY.md).
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:       func(*httputil.ProxyRequest) {}, // target set in ServeHTTP via context
		FlushInterval: -1,
		Transport:     stallWatch{memBody{p.tr}, p},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Debug("proxy upstream error", "err", err, "path", r.URL.Path)
			if errors.Is(err, syscall.ECONNREFUSED) {
				writePortClosed(w, r)
				return
			}
			fail(w, http.StatusBadGateway, "sandbox port is not reachable: "+upstreamErr(err))
		},
	}
	return p
}

// upstreamErr is what a 502 says of err: a *net.OpError's addresses (the
// sandbox's IP on the host's sandbox subnet, the daemon's own) are left
// out, its operation and cause kept ("dial: connect: connection refused").
func upstreamErr(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}

// Match reports whether r is sandbox traffic: it carries routing headers or a
// sandbox Host, or it is a signed /files URL.
func (p *Proxy) Match(r *http.Request) bool {
	if _, ok, _ := Route(r, p.domain); ok {
		return true
	}
	return r.URL.Path == "/files" && r.URL.Query().Get("signature") != ""
}

// ServeHTTP routes, authenticates and forwards r.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, ok, err := Route(r, p.domain)
	if err != nil {
		p.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var in sandbox.Info
	if ok {
		in, err = p.sbx.Get(t.ID)
		if err != nil && p.sbx.AdoptMovedTraffic(r.Context(), t.ID) == nil {
			in, err = p.sbx.Get(t.ID)
		}
	} else if p.authSpent(w, r) {
		return
	} else if t, in, err = p.bySignature(r); err != nil {
		p.refuse(w, r, signatureStatus(err), err.Error())
		return
	}
	if err != nil {
		WriteSandboxNotFound(w, r, t.ID) // ended or unknown: E2B answers both alike
		return
	}
	if status, msg := authorize(r, t, in); status != 0 {
		p.refuse(w, r, status, msg)
		return
	}
	if in.State == store.StatePaused {
		if in, err = p.resume(w, r, in); err != nil {
			return
		}
	}
	if in.State != store.StateRunning || in.AgentAddr == "" {
		p.fail(w, http.StatusBadGateway, "sandbox is not running")
		return
	}
	release, ok := p.admit(in.ID, in.Team)
	if !ok {
		TooMany(w, p.fail, "too many open requests to this sandbox, its team's sandboxes or this node; close some and retry")
		return
	}
	defer release()
	p.forward(w, r, in, t.Port)
}

// TooMany answers 429 with msg to a request refused for the requests in
// flight, asking for a retry in a second and closing the connection (a
// refused client holds no descriptor).
func TooMany(w http.ResponseWriter, fail ErrorWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	fail(w, http.StatusTooManyRequests, msg)
}

// upstreamSuffix names sandboxes in upstream URLs: the connection pool is
// keyed by "<id>.sandbox:<port>", never by IP, because a killed sandbox's
// address is reused by the next one and a pooled connection to the dead
// agent must never carry another sandbox's traffic. The sandbox's epoch
// (bumped by every resume) is part of the name: connections to the agent
// before a pause are dead and must not be reused after it.
const upstreamSuffix = ".sandbox"

// dial resolves "<id>.sandbox:<port>" to the sandbox's current address.
func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	id, _, _ := strings.Cut(strings.TrimSuffix(host, upstreamSuffix), "-")
	in, err := p.sbx.Get(id)
	if err != nil {
		return nil, err
	}
	ip, _, _ := net.SplitHostPort(in.AgentAddr)
	if p.testPort != 0 {
		port = strconv.Itoa(p.testPort)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.DialContext(ctx, network, net.JoinHostPort(ip, port))
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, in sandbox.Info, port int) {
	host := in.ID + "-" + strconv.Itoa(in.Epoch) + upstreamSuffix
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if in.Done != nil {
		go func() {
			select {
			case <-in.Done: // the sandbox ended: end its streams too
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	// Full duplex: the HTTP/1 server otherwise closes the unread inbound
	// body as soon as the response starts; the transport still copying it
	// upstream then fails and tears down the upstream connection, cutting a
	// response that is already streaming. Not supported on HTTP/2, which is
	// always full duplex.
	_ = http.NewResponseController(w).EnableFullDuplex()
	w, report := p.observed(w, r)
	defer report()
	out := r.Clone(ctx)
	defer DetachBody(w, r, out)()
	out.URL.Scheme = "http"
	out.URL.Host = net.JoinHostPort(host, strconv.Itoa(port))
	out.Host = r.Host // servers in the sandbox see the host the client used
	if n := in.Network; n != nil && port != EnvdPort {
		if n.MaskRequestHost != "" {
			out.Host = sandbox.MaskHost(n.MaskRequestHost, port) // or the one it asked for
		}
		if slices.Contains(n.HTTPSPorts, port) {
			out.URL.Scheme = "https" // the port serves TLS (network.httpsPorts)
		}
	}
	out.Header.Del("X-Sbx-Init-Token") // only the daemon itself may send it
	p.rp.ServeHTTP(w, out)
}

// authorize checks the request against the sandbox's tokens. It returns a
// non-zero status to refuse. The agent's /init is never reachable from
// outside; other envd paths need the sandbox's X-Access-Token, except
// /health and signed /files requests (checkSigned: the signature must be
// the sandbox's token's; the agent checks the rest).
func authorize(r *http.Request, t Target, in sandbox.Info) (int, string) {
	if t.Port == EnvdPort {
		clean := path.Clean("/" + r.URL.Path)
		switch {
		case clean == "/init":
			return http.StatusForbidden, "/init is reserved for the daemon"
		case clean == "/health" && r.Method == http.MethodGet:
			return 0, ""
		case clean == "/files" && r.Header.Get("X-Access-Token") == "" && r.URL.Query().Get("signature") != "":
			return checkSigned(r, in.EnvdToken)
		}
		if !tokenOK(r.Header.Get("X-Access-Token"), in.EnvdToken) {
			return http.StatusUnauthorized, "invalid or missing X-Access-Token for this sandbox"
		}
		return 0, ""
	}
	if in.TrafficTok != "" && !tokenOK(r.Header.Get("E2b-Traffic-Access-Token"), in.TrafficTok) {
		return http.StatusForbidden, errTrafficToken
	}
	return 0, ""
}

// refuse answers status with msg, a failed authentication (401, or 403
// for a wrong traffic token: not for /init) within its address's bound
// (refuseAuth).
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if status == http.StatusUnauthorized || (status == http.StatusForbidden && msg == errTrafficToken) {
		p.refuseAuth(w, r, status, msg)
		return
	}
	p.fail(w, status, msg)
}

// errTrafficToken is the answer to a wrong e2b-traffic-access-token.
const errTrafficToken = "invalid or missing e2b-traffic-access-token"

func tokenOK(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Errors of a signed /files URL that no sandbox's token produced.
var (
	// errBadSignature is envd's answer (401, its words) to a signature
	// its token did not make: with no sandbox in the URL, every sandbox's
	// envd would say so.
	errBadSignature = errors.New("invalid signature")
	errBadExpiry    = errors.New("invalid signature_expiration")
)

// signatureStatus is the status of a bySignature error.
func signatureStatus(err error) int {
	if errors.Is(err, errBadExpiry) {
		return http.StatusBadRequest
	}
	return http.StatusUnauthorized
}

// bySignature finds the sandbox whose token produced a signed /files URL;
// else errBadSignature (or errBadExpiry for an expiry that is no number).
func (p *Proxy) bySignature(r *http.Request) (Target, sandbox.Info, error) {
	signer, sig, exp, err := signedParts(r)
	if err != nil {
		return Target{}, sandbox.Info{}, err
	}
	for _, in := range p.sbx.List() {
		if envdsig.Equal(sig, signer.Sign(in.EnvdToken, exp)) {
			return Target{ID: in.ID, Port: EnvdPort}, in, nil
		}
	}
	return Target{}, sandbox.Info{}, errBadSignature
}

// checkSigned refuses (401, envd's words) a signed /files URL routed to a
// sandbox whose token did not make it, as its agent would, so that the
// failure counts against its address (authlimit.go); the agent checks
// the rest (expiry; an expiry that is no number is its 400).
func checkSigned(r *http.Request, token string) (int, string) {
	signer, sig, exp, err := signedParts(r)
	if err == nil && !envdsig.Equal(sig, signer.Sign(token, exp)) {
		return http.StatusUnauthorized, errBadSignature.Error()
	}
	return 0, ""
}

// signedParts are a signed /files URL's signer (its path, operation and
// user hashed once), signature and expiry; errBadExpiry for an expiry that
// is no number.
func signedParts(r *http.Request) (envdsig.Signer, string, int64, error) {
	q := r.URL.Query()
	op := "read"
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		op = "write"
	}
	exp, ok := envdsig.ParseExpiry(q.Get("signature_expiration"))
	if !ok {
		return envdsig.Signer{}, "", 0, errBadExpiry
	}
	return envdsig.NewSigner(q.Get("path"), op, q.Get("username")), q.Get("signature"), exp, nil
}

// smallBody is the largest declared request body DetachBody reads whole
// before forwarding. A body the transport holds in memory goes upstream in
// the same write as the headers; any other is written after them in a write
// of its own (net/http flushes the headers first), which under gVisor is one
// more segment through the sandbox's netstack and a second read for the
// server there (a runCode's POST /execute, an RPC's request).
const smallBody = 64 << 10

// DetachBody gives out, the copy of r a handler hands to an
// http.Transport, a body that nothing reads or closes once the returned cut
// has run; call cut before the handler returns (defer it). A body of a
// declared length up to smallBody is read here and handed over in memory;
// any other is wrapped (see cutBody). A failed read hands on what was read
// and the error, for the transport to fail the request with.
func DetachBody(w http.ResponseWriter, r, out *http.Request) (cut func()) {
	if r.Body == nil || r.Body == http.NoBody {
		return func() {}
	}
	var rest io.ReadCloser = r.Body
	if r.ContentLength > 0 && r.ContentLength <= smallBody {
		b := make([]byte, r.ContentLength)
		n, err := io.ReadFull(r.Body, b)
		if err == nil {
			*out = *out.WithContext(context.WithValue(out.Context(), memBodyKey{}, b))
			out.Body = io.NopCloser(bytes.NewReader(b))
			return func() {}
		}
		rest = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b[:n]), r.Body), r.Body}
	}
	body := newCutBody(rest, r.ContentLength)
	out.Body = body
	return func() { body.Cut(readDeadline(w, r)) }
}

// memBodyKey keys the bytes of a body DetachBody read whole in the
// request's context.
type memBodyKey struct{}

// memBody is the proxy's transport: a request whose body DetachBody read
// into memory goes on with that body as a bytes.Reader, which net/http
// writes with the headers (httputil.ReverseProxy wraps every body in a type
// of its own, which net/http must assume may block, so it would flush the
// headers alone first).
type memBody struct{ http.RoundTripper }

func (m memBody) RoundTrip(r *http.Request) (*http.Response, error) {
	if b, ok := r.Context().Value(memBodyKey{}).([]byte); ok && r.Body != nil && r.ContentLength == int64(len(b)) {
		r = r.WithContext(r.Context()) // a shallow copy: a RoundTripper leaves its request as it is
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return m.RoundTripper.RoundTrip(r)
}

// readDeadline returns the function that sets r's connection read deadline,
// or nil on HTTP/2, whose streams do not share a connection reader.
func readDeadline(w http.ResponseWriter, r *http.Request) func(time.Time) error {
	if r.ProtoMajor != 1 {
		return nil
	}
	return http.NewResponseController(w).SetReadDeadline
}
