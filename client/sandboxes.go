package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Runtimes are the OCI runtimes a sandbox can be created with.
var Runtimes = []string{"runsc", "crun", "runc"}

// Create creates a sandbox (POST /v2/sandboxes).
func (c *Client) Create(ctx context.Context, req CreateRequest) (*Sandbox, error) {
	if req.TemplateID == "" {
		req.TemplateID = "base"
	}
	if err := checkTimeout(req.Timeout, true); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	if err := checkRuntime(req.Runtime); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	var sb Sandbox
	if _, err := c.do(ctx, http.MethodPost, "/v2/sandboxes", req, &sb); err != nil {
		return nil, err
	}
	return &sb, nil
}

// Get returns a sandbox's details (GET /sandboxes/{id}).
func (c *Client) Get(ctx context.Context, id string) (*SandboxDetail, error) {
	p, err := sandboxPath(id, "")
	if err != nil {
		return nil, err
	}
	var d SandboxDetail
	if _, err := c.do(ctx, http.MethodGet, p, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Kill removes a sandbox (DELETE /sandboxes/{id}). An unknown id gives an
// error matching ErrNotFound.
func (c *Client) Kill(ctx context.Context, id string) error {
	p, err := sandboxPath(id, "")
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, nil, nil)
	return err
}

// SetTimeout makes the sandbox expire d from now (POST /sandboxes/{id}/timeout).
func (c *Client) SetTimeout(ctx context.Context, id string, d time.Duration) error {
	p, err := sandboxPath(id, "/timeout")
	if err != nil {
		return err
	}
	if err := checkTimeout(d, false); err != nil {
		return fmt.Errorf("set timeout: %w", err)
	}
	_, err = c.do(ctx, http.MethodPost, p, map[string]int64{"timeout": ceilSeconds(d)}, nil)
	return err
}

// Connect returns an existing sandbox with its access token (POST
// /v2/sandboxes/{id}/connect). A non-zero timeout extends the sandbox's
// lifetime to at least that long from now; zero leaves it unchanged.
func (c *Client) Connect(ctx context.Context, id string, timeout time.Duration) (*Sandbox, error) {
	p, err := sandboxPath(id, "/connect")
	if err != nil {
		return nil, err
	}
	if err := checkTimeout(timeout, true); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	body := map[string]int64{}
	if timeout > 0 {
		body["timeout"] = ceilSeconds(timeout)
	}
	var sb Sandbox
	if _, err := c.do(ctx, http.MethodPost, "/v2"+p, body, &sb); err != nil {
		return nil, err
	}
	return &sb, nil
}

// Metrics returns a sandbox's resource samples (GET /sandboxes/{id}/metrics).
func (c *Client) Metrics(ctx context.Context, id string) ([]Metric, error) {
	p, err := sandboxPath(id, "/metrics")
	if err != nil {
		return nil, err
	}
	var ms []Metric
	if _, err := c.do(ctx, http.MethodGet, p, nil, &ms); err != nil {
		return nil, err
	}
	return ms, nil
}

// Templates lists the templates sandboxes can be created from (GET /templates).
func (c *Client) Templates(ctx context.Context) ([]Template, error) {
	var ts []Template
	if _, err := c.do(ctx, http.MethodGet, "/templates", nil, &ts); err != nil {
		return nil, err
	}
	return ts, nil
}

// Health checks that the daemon is up (GET /health).
func (c *Client) Health(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/health", nil, nil)
	return err
}

// sandboxPath is "/sandboxes/{id}"+suffix, rejecting an empty id.
func sandboxPath(id, suffix string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: empty sandbox id", ErrBadRequest)
	}
	return "/sandboxes/" + url.PathEscape(id) + suffix, nil
}

func checkRuntime(r string) error {
	if r == "" {
		return nil
	}
	for _, ok := range Runtimes {
		if r == ok {
			return nil
		}
	}
	return fmt.Errorf("%w: unknown runtime %q (want runsc, crun or runc)", ErrBadRequest, r)
}
