// Package reqid carries an API request's id: accepted from the client's
// X-Request-Id when well formed, generated otherwise, returned in the
// response, and attached to the request's log lines and audit records.
package reqid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
)

// Header is the request and response header carrying the id.
const Header = "X-Request-Id"

type key struct{}

// Valid reports whether a client-sent id may be used as is: 1-128
// characters of [A-Za-z0-9._:-] (no spaces, quotes or control characters,
// so it can never forge a log line or a header).
func Valid(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// New returns a fresh random id (32 hex characters).
func New() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Pick returns the client's id if Valid, else a new one.
func Pick(client string) string {
	if Valid(client) {
		return client
	}
	return New()
}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the id in ctx ("" when none).
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Handler adds a request_id attribute to every record logged with a
// context carrying an id (slog's *Context methods).
type Handler struct{ slog.Handler }

// Handle implements slog.Handler.
func (h Handler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h Handler) WithAttrs(as []slog.Attr) slog.Handler { return Handler{h.Handler.WithAttrs(as)} }

// WithGroup implements slog.Handler.
func (h Handler) WithGroup(name string) slog.Handler { return Handler{h.Handler.WithGroup(name)} }
