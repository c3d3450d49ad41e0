package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/client/clienttest"
)

const key = "sbx_testkey"

func newTest(t *testing.T) (*clienttest.Server, *client.Client) {
	t.Helper()
	srv := clienttest.NewServer(t, key)
	return srv, client.New(srv.URL, key, client.WithUserAgent("sbx-test"))
}

func lastReq(t *testing.T, srv *clienttest.Server) clienttest.Request {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the server")
	}
	return reqs[len(reqs)-1]
}

func TestCreateBody(t *testing.T) {
	no := false
	tests := []struct {
		name string
		req  client.CreateRequest
		want string
	}{
		{"defaults", client.CreateRequest{}, `{"templateID":"base"}`},
		{"all", client.CreateRequest{TemplateID: "code-interpreter-v1", Timeout: 1500 * time.Millisecond,
			Metadata: map[string]string{"a": "b"}, EnvVars: map[string]string{"X": "1"}, AllowInternetAccess: &no,
			Runtime: "crun"},
			`{"templateID":"code-interpreter-v1","metadata":{"a":"b"},"envVars":{"X":"1"},"allow_internet_access":false,"runtime":"crun","timeout":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := newTest(t)
			sb, err := c.Create(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			r := lastReq(t, srv)
			if r.Method != "POST" || r.Path != "/v2/sandboxes" || string(r.Body) != tt.want+"\n" && string(r.Body) != tt.want {
				t.Errorf("got %s %s %s, want POST /v2/sandboxes %s", r.Method, r.Path, r.Body, tt.want)
			}
			for h, want := range map[string]string{"X-Api-Key": key, "Content-Type": "application/json", "User-Agent": "sbx-test"} {
				if got := r.Header.Get(h); got != want {
					t.Errorf("header %s = %q, want %q", h, got, want)
				}
			}
			if len(sb.SandboxID) != 20 || sb.EnvdAccessToken == "" || sb.EnvdVersion != "0.6.4" {
				t.Errorf("sandbox = %+v", sb)
			}
		})
	}
}

func TestLifecycleCalls(t *testing.T) {
	srv, c := newTest(t)
	ctx := context.Background()
	sb, err := c.Create(ctx, client.CreateRequest{Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		call         func() error
		method, path string
		body         string
	}{
		{"get", func() error { d, err := c.Get(ctx, sb.SandboxID); checkDetail(t, d, sb); return err }, "GET", "/sandboxes/" + sb.SandboxID, ""},
		{"timeout", func() error { return c.SetTimeout(ctx, sb.SandboxID, 1500*time.Millisecond) }, "POST", "/sandboxes/" + sb.SandboxID + "/timeout", `{"timeout":2}`},
		{"connect", func() error { _, err := c.Connect(ctx, sb.SandboxID, time.Minute); return err }, "POST", "/v2/sandboxes/" + sb.SandboxID + "/connect", `{"timeout":60}`},
		{"connect no timeout", func() error { _, err := c.Connect(ctx, sb.SandboxID, 0); return err }, "POST", "/v2/sandboxes/" + sb.SandboxID + "/connect", `{}`},
		{"metrics", func() error { m, err := c.Metrics(ctx, sb.SandboxID); checkLen(t, len(m), 1); return err }, "GET", "/sandboxes/" + sb.SandboxID + "/metrics", ""},
		{"templates", func() error { ts, err := c.Templates(ctx); checkLen(t, len(ts), 2); return err }, "GET", "/templates", ""},
		{"health", func() error { return c.Health(ctx) }, "GET", "/health", ""},
		{"kill", func() error { return c.Kill(ctx, sb.SandboxID) }, "DELETE", "/sandboxes/" + sb.SandboxID, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err != nil {
				t.Fatal(err)
			}
			r := lastReq(t, srv)
			if r.Method != tt.method || r.Path != tt.path || compactJSON(r.Body) != tt.body {
				t.Errorf("got %s %s %s, want %s %s %s", r.Method, r.Path, r.Body, tt.method, tt.path, tt.body)
			}
		})
	}
	if n := len(srv.Sandboxes()); n != 0 {
		t.Errorf("%d sandboxes left after kill", n)
	}
}

func checkDetail(t *testing.T, d *client.SandboxDetail, sb *client.Sandbox) {
	t.Helper()
	if d == nil || d.SandboxID != sb.SandboxID || d.State != "running" || d.Metadata["k"] != "v" || d.EnvdAccessToken != sb.EnvdAccessToken || d.EndAt.IsZero() {
		t.Errorf("detail = %+v", d)
	}
}

func checkLen(t *testing.T, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("got %d items, want %d", got, want)
	}
}

func compactJSON(b []byte) string {
	var v any
	if len(b) == 0 || json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestErrors(t *testing.T) {
	srv, c := newTest(t)
	ctx := context.Background()
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/sandboxes/proxyerror" {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("upstream down\n"))
			return true
		}
		return false
	}
	tests := []struct {
		name     string
		call     func(*client.Client) error
		sentinel error
		apiErr   *client.APIError // nil: a client-side error, no request sent
	}{
		{"bad key", func(*client.Client) error { return client.New(srv.URL, "wrong").Kill(ctx, "x") }, client.ErrUnauthorized, &client.APIError{Status: 401, Code: 401, Message: "invalid or missing X-API-Key"}},
		{"kill unknown", func(c *client.Client) error { return c.Kill(ctx, "nosuch") }, client.ErrNotFound, &client.APIError{Status: 404, Code: 404, Message: `sandbox "nosuch" not found`}},
		{"get unknown", func(c *client.Client) error { _, err := c.Get(ctx, "nosuch"); return err }, client.ErrNotFound, &client.APIError{Status: 404, Code: 404, Message: `sandbox "nosuch" not found`}},
		{"bad template", func(c *client.Client) error {
			_, err := c.Create(ctx, client.CreateRequest{TemplateID: "nope"})
			return err
		}, client.ErrBadRequest, &client.APIError{Status: 400, Code: 400, Message: `unknown template "nope"`}},
		{"plain text body", func(c *client.Client) error { return c.Kill(ctx, "proxyerror") }, client.ErrUnavailable, &client.APIError{Status: 502, Message: "upstream down"}},
		{"empty id", func(c *client.Client) error { return c.Kill(ctx, "") }, client.ErrBadRequest, nil},
		{"bad runtime", func(c *client.Client) error {
			_, err := c.Create(ctx, client.CreateRequest{Runtime: "kata"})
			return err
		}, client.ErrBadRequest, nil},
		{"negative timeout", func(c *client.Client) error {
			_, err := c.Create(ctx, client.CreateRequest{Timeout: -time.Second})
			return err
		}, client.ErrBadRequest, nil},
		{"zero set timeout", func(c *client.Client) error { return c.SetTimeout(ctx, "x", 0) }, client.ErrBadRequest, nil},
		{"bad list state", func(c *client.Client) error {
			_, err := c.List(ctx, client.ListOptions{State: []string{"dead"}})
			return err
		}, client.ErrBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.Requests())
			err := tt.call(c)
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("err = %v, want %v", err, tt.sentinel)
			}
			var ae *client.APIError
			if errors.As(err, &ae) != (tt.apiErr != nil) || tt.apiErr != nil && *ae != *tt.apiErr {
				t.Errorf("APIError = %+v, want %+v", ae, tt.apiErr)
			}
			if sent := len(srv.Requests()) > before; sent != (tt.apiErr != nil) {
				t.Errorf("request sent = %v, want %v", sent, tt.apiErr != nil)
			}
		})
	}
}

func TestRetriesRateLimit(t *testing.T) {
	tests := []struct {
		name       string
		failures   int
		retryAfter string
		wantErr    error
		wantCalls  int
	}{
		{"recovers", 2, "0", nil, 3},
		{"gives up after 3 retries", 10, "0", client.ErrRateLimited, 4},
		{"no retry without Retry-After", 1, "", client.ErrRateLimited, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := newTest(t)
			calls := 0
			srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
				if calls++; calls > tt.failures {
					return false
				}
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				clienttest.WriteError(w, http.StatusTooManyRequests, "slow down")
				return true
			}
			if _, err := c.Templates(context.Background()); !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
