package eventlog

import (
	"context"
	"log/slog"
)

// Handler tees the agent's own log records of at least Info into a Log
// (logger "agent"), passing every record on to next.
type Handler struct {
	next  slog.Handler
	log   *Log
	attrs []slog.Attr
}

// NewHandler wraps next.
func NewHandler(next slog.Handler, l *Log) *Handler { return &Handler{next: next, log: l} }

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, lv slog.Level) bool { return h.next.Enabled(ctx, lv) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		f := map[string]string{}
		for _, a := range h.attrs {
			f[a.Key] = a.Value.String()
		}
		r.Attrs(func(a slog.Attr) bool { f[a.Key] = a.Value.String(); return true })
		h.log.Add(levelName(r.Level), "agent", r.Message, f)
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(as), log: h.log, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

// WithGroup implements slog.Handler (groups are flattened in the copy).
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), log: h.log, attrs: h.attrs}
}

func levelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warn"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}
