// Package client is the Go SDK of sbx. It speaks the E2B lifecycle REST API
// of an sbx daemon (sbx serve) and, through the same origin, the envd
// protocol of each sandbox (processes and files), routed by the
// E2b-Sandbox-Id and E2b-Sandbox-Port headers the E2B SDKs send.
//
// The sbx CLI and the MCP server use only this package.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultURL is where sbx serve listens by default.
const DefaultURL = "http://127.0.0.1:3000"

// requestTimeout bounds each lifecycle API call, as the E2B SDK does (60 s).
// Sandbox traffic (Run, files) is bounded by the caller's context only.
const requestTimeout = 60 * time.Second

// maxRetries is how often a 429 with Retry-After is retried, as in the SDK.
const maxRetries = 3

// Client talks to one sbx daemon. It is safe for concurrent use.
type Client struct {
	baseURL   string
	apiKey    string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client used for all requests. It must not set
// http.Client.Timeout if commands run longer than that: streams use it too.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithUserAgent sets the User-Agent header of all requests.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the daemon at baseURL (an origin such as
// "http://127.0.0.1:3000"; "" means DefaultURL), authenticating with apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	if baseURL == "" {
		baseURL = DefaultURL
	}
	c := &Client{
		baseURL:   strings.TrimRight(baseURL, "/"),
		apiKey:    apiKey,
		http:      &http.Client{},
		userAgent: "sbx-go-client",
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the daemon origin the client talks to.
func (c *Client) BaseURL() string { return c.baseURL }

// do sends one lifecycle API request. in (may be nil) is sent as JSON; if out
// is non-nil the 2xx response body is decoded into it. It returns the
// response headers.
func (c *Client) do(ctx context.Context, method, path string, in, out any) (http.Header, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, fmt.Errorf("%s %s: encoding request: %w", method, path, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		resp, err := c.send(ctx, method, path, body, in != nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		if wait, ok := retryAfter(resp); ok && attempt < maxRetries {
			resp.Body.Close()
			if err := sleep(ctx, wait); err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, err)
			}
			continue
		}
		defer resp.Body.Close()
		if err := decodeResponse(resp, out); err != nil {
			return resp.Header, fmt.Errorf("%s %s: %w", method, path, err)
		}
		return resp.Header, nil
	}
}

// send performs one attempt of a lifecycle API request.
func (c *Client) send(ctx context.Context, method, path string, body []byte, hasBody bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-Key", c.apiKey)
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.http.Do(req)
}

// decodeResponse turns a non-2xx response into an *APIError and decodes a
// 2xx body into out (when out is non-nil).
func decodeResponse(resp *http.Response, out any) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return parseAPIError(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding response (status %d): %w", resp.StatusCode, err)
	}
	return nil
}
