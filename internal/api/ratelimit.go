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
