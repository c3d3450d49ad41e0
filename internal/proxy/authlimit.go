package proxy

import (
	"net"
	"net/http"
	"strconv"

	"github.com/sbx-dev/sbx/internal/ratelimit"
)

// Failed authentication on sandbox traffic is limited per remote address,
// as the API's wrong keys are (internal/api ratelimit.go): a wrong or
// missing X-Access-Token (401), a wrong e2b-traffic-access-token (403) and
// a signed /files URL no sandbox's token made (401) each spend a token of
// the address's bucket; past it they are answered 429 with Retry-After,
// and the refusals are logged once a second per address, not one by one.
// A request with a right token is never refused for failures, its
// address's or another's. A signed URL names no sandbox, so finding its
// sandbox is a search over every sandbox's token (bySignature), for
// anyone: an address past its bound gets 429 before any search. Before,
// none of these was limited.

// The bound: the API's for requests without a valid key.
const (
	authFailRate  = 20
	authFailBurst = 100
)

// SetAuthLimiter replaces the per-address bucket of failed authentications
// (New makes one of authFailRate a second, burst authFailBurst; nil: no
// limit). Call before serving.
func (p *Proxy) SetAuthLimiter(l *ratelimit.Limiter) { p.authLim = l }

// refuseAuth answers a request that failed authentication status with msg,
// or 429 once its address is past its bound.
func (p *Proxy) refuseAuth(w http.ResponseWriter, r *http.Request, status int, msg string) {
	host := remoteHost(r)
	ok, report := p.authLim.Allow(host)
	if ok {
		p.fail(w, status, msg)
		return
	}
	p.tooManyFailures(w, host, report)
}

// authSpent answers 429 to a request whose address is past its bound of
// failed authentications, before a search its failure would spend a token
// on; true when it did.
func (p *Proxy) authSpent(w http.ResponseWriter, r *http.Request) bool {
	host := remoteHost(r)
	if !p.authLim.Spent(host) {
		return false
	}
	_, report := p.authLim.Allow(host) // refused: counts the refusal
	p.tooManyFailures(w, host, report)
	return true
}

// tooManyFailures answers 429 with Retry-After and logs report refusals
// (at most once a second per address: see ratelimit.Limiter.Allow).
func (p *Proxy) tooManyFailures(w http.ResponseWriter, host string, report int) {
	if report > 0 {
		p.log.Warn("sandbox traffic: failed authentications rate limited", "remote", host, "refused", strconv.Itoa(report))
	}
	w.Header().Set("Retry-After", "1")
	p.fail(w, http.StatusTooManyRequests, "too many failed authentications from this address: slow down (rate limit)")
}

// remoteHost is r's remote address without its port.
func remoteHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}
