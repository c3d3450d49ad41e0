package client

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Pause saves a running sandbox and releases its host resources (POST
// /sandboxes/{id}/pause). memory false keeps the files only (processes
// restart on resume). It fails with ErrConflict if the sandbox is already
// paused and ErrNotSupported on runtimes without memory checkpoints.
// Resume it with Connect.
func (c *Client) Pause(ctx context.Context, id string, memory bool) error {
	p, err := sandboxPath(id, "/pause")
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPost, p, map[string]bool{"memory": memory}, nil)
	return err
}

// ForkResult is one child of Fork: the new sandbox, or why it failed.
type ForkResult struct {
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Fork starts count live copies (memory and files) of a running sandbox,
// each with its own identity and the given timeout (POST
// /sandboxes/{id}/fork). Children fail independently.
func (c *Client) Fork(ctx context.Context, id string, count int, timeout time.Duration) ([]ForkResult, error) {
	p, err := sandboxPath(id, "/fork")
	if err != nil {
		return nil, err
	}
	if err := checkTimeout(timeout, true); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	body := map[string]int64{"count": int64(count)}
	if timeout > 0 {
		body["timeout"] = ceilSeconds(timeout)
	}
	var out []ForkResult
	if _, err := c.do(ctx, http.MethodPost, p, body, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// SnapshotInfo is a snapshot (E2B's SnapshotInfo plus sbx's details).
type SnapshotInfo struct {
	SnapshotID string    `json:"snapshotID"`
	Names      []string  `json:"names"`
	SandboxID  string    `json:"sandboxID"`
	TemplateID string    `json:"templateID"`
	CreatedAt  time.Time `json:"createdAt"`
	Bytes      int64     `json:"bytes"`
}

// Snapshot saves a running sandbox as a snapshot that Create can start
// from (its id or name as the template) (POST /sandboxes/{id}/snapshots).
func (c *Client) Snapshot(ctx context.Context, id, name string) (*SnapshotInfo, error) {
	p, err := sandboxPath(id, "/snapshots")
	if err != nil {
		return nil, err
	}
	body := map[string]string{}
	if name != "" {
		body["name"] = name
	}
	var s SnapshotInfo
	if _, err := c.do(ctx, http.MethodPost, p, body, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
