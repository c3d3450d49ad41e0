package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// LogEntry is one sandbox log line (E2B's SandboxLogEntry).
type LogEntry struct {
	Timestamp time.Time         `json:"timestamp"`
	Level     string            `json:"level"`
	Message   string            `json:"message"`
	Fields    map[string]string `json:"fields,omitempty"`
}

// LogsOptions select a page of logs (E2B's v2 logs query). Zero values are
// left to the daemon.
type LogsOptions struct {
	Cursor    time.Time // entries from this time on (forward) or up to it (backward)
	Limit     int       // at most this many entries
	Direction string    // "forward" or "backward"
	Level     string    // minimum level: debug, info, warn or error
}

func (o LogsOptions) query() string {
	q := url.Values{}
	if !o.Cursor.IsZero() {
		q.Set("cursor", strconv.FormatInt(o.Cursor.UnixMilli(), 10))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Direction != "" {
		q.Set("direction", o.Direction)
	}
	if o.Level != "" {
		q.Set("level", o.Level)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// Logs returns a page of a sandbox's logs (GET /v2/sandboxes/{id}/logs).
// Logs outlive the sandbox: a killed one's can still be read.
func (c *Client) Logs(ctx context.Context, id string, opts LogsOptions) ([]LogEntry, error) {
	p, err := sandboxPath(id, "/logs")
	if err != nil {
		return nil, err
	}
	var out struct {
		Logs []LogEntry `json:"logs"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/v2"+p+opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return out.Logs, nil
}
