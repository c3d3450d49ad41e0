package api

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/sbx-dev/sbx/internal/ratelimit"
)

// Request rate limits. Every API call writes an audit record (and a log
// line for changes and failures), so an unbounded request rate is an
// unbounded disk write: one team key (or no key at all: 401s are audited
// too) reached 12,000 requests and 5.7 MB of audit log a second on a
// 2-core host. Past its bucket a caller gets 429 with Retry-After, and its
// refusals are neither audited nor logged one by one: one "api.limited"
// record (and one warning) a second per caller says how many were refused.

// Unauthenticated requests (401s) are limited per remote address.
const (
	unauthRate  = 20
	unauthBurst = 100
)

// SetTeamRate limits each team key's API requests to rate a second, burst
// burst (rate 0: unlimited). Admin keys are never limited. Call before
// serving.
func (s *Server) SetTeamRate(rate, burst float64) { s.teamLim = ratelimit.New(rate, burst) }

// gate resolves key and holds its caller to the rate limits: a team key to
// its team's bucket, an unknown key (answered 401, audited) to its
// address's; admin keys are not limited. ok is false when the answer (401
// or 429) has been written.
func (s *Server) gate(w http.ResponseWriter, r *http.Request, key string) (_ Principal, ok bool) {
	p, ok := s.principal(key)
	if !ok {
		s.refuse401(w, r, "invalid or missing X-API-Key")
		return Principal{}, false
	}
	if !p.Admin && s.teamLimited(w, r, p) {
		return Principal{}, false
	}
	return p, true
}

// refuse401 answers a request no credential admitted 401 with msg
// (audited), within its address's bucket of unauthenticated requests (429
// past it).
func (s *Server) refuse401(w http.ResponseWriter, r *http.Request, msg string) {
	if !s.unauthLimited(w, r, http.StatusUnauthorized) {
		s.record(r, "", http.StatusUnauthorized)
		WriteError(w, http.StatusUnauthorized, msg)
	}
}

// unauthLimited holds an unauthenticated request answered status to its
// address's bucket; true when it answered 429 instead.
func (s *Server) unauthLimited(w http.ResponseWriter, r *http.Request, status int) bool {
	host := remoteHost(r)
	return s.limited(w, r, s.unauthLim, host, "", map[string]string{"remote": host, "status": strconv.Itoa(status)})
}

// teamLimited holds team key p's request to its team's bucket; true when
// it answered 429.
func (s *Server) teamLimited(w http.ResponseWriter, r *http.Request, p Principal) bool {
	return s.limited(w, r, s.teamLim, p.TeamID(), p.KeyID, map[string]string{"team": p.TeamID(), "remote": remoteHost(r)})
}

// noRoute answers a request no route takes (404 {code, message}, logged
// as every API answer past 400) within its caller's rate limit: a team
// key's team bucket, an admin key none, anything else its address's
// bucket of unauthenticated requests. Before, these were not limited: a
// client without a key wrote 1.1 MB of the daemon's log a second with
// requests for paths that do not exist, which under journald's rate limit
// also silences the daemon's own lines (egress blocks, secret uses).
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	if s.refusedUnauthenticated(w, r, http.StatusNotFound) {
		return
	}
	WriteError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+truncate(r.URL.Path, 256))
}

// refusedUnauthenticated holds a request that no API key gate admitted
// (no route, a refused upload link) to its caller's rate limit, as gate
// does, and reports whether it answered 429 instead of status.
func (s *Server) refusedUnauthenticated(w http.ResponseWriter, r *http.Request, status int) bool {
	p, ok := s.principal(r.Header.Get("X-API-Key"))
	switch {
	case ok && p.Admin:
		return false
	case ok:
		return s.teamLimited(w, r, p)
	}
	return s.unauthLimited(w, r, status)
}

// Admit gates a request that is served beside the API but acts with an API
// key (/mcp, whose tools then call the API with it): key is authenticated
// as every API route does and its caller held to the same rate limits, a
// team key's bucket shared with its API calls (gate). It returns the key's
// team as the API shows it; when ok is false the answer (401 or 429,
// {code, message}) has been written.
func (s *Server) Admit(w http.ResponseWriter, r *http.Request, key string) (team string, ok bool) {
	p, ok := s.gate(w, r, key)
	if !ok {
		return "", false
	}
	return p.TeamID(), true
}

// limited answers 429 when key is past its bucket in l and reports
// its refusals once a second; it reports whether the request was refused.
// A refused request is marked so that it is logged at debug only.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, l *ratelimit.Limiter, key, actor string, fields map[string]string) bool {
	ok, report := l.Allow(key)
	if ok {
		return false
	}
	markLimited(r)
	if report > 0 {
		fields["refused"] = strconv.Itoa(report)
		s.log.Warn("api rate limit", slog.Any("caller", fields))
		if s.audit != nil {
			_ = s.audit.Append("api.limited", "", actor, fields)
		}
	}
	WriteError(w, http.StatusTooManyRequests, "too many requests: slow down (rate limit)")
	return true
}

// remoteHost is r's remote address without its port.
func remoteHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// limitMark is set on a request the limiter refused (serveObserved puts
// one in every request's context).
type limitMark struct{ set bool }

type limitMarkKey struct{}

func withLimitMark(r *http.Request) (*http.Request, *limitMark) {
	m := &limitMark{}
	return r.WithContext(context.WithValue(r.Context(), limitMarkKey{}, m)), m
}

func markLimited(r *http.Request) {
	if m, ok := r.Context().Value(limitMarkKey{}).(*limitMark); ok {
		m.set = true
	}
}
