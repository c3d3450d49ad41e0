package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/api/proto/envd/filesystem/filesystemconnect"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
)

// EnvdPort is the port of envd, the agent inside each sandbox.
const EnvdPort = 49983

// MaxAgentMessage bounds one Connect message read from a sandbox's agent
// (a process event, a directory listing), after decompression. The agent
// is the sandbox's, so hostile to the daemon, which reads it with this
// client for the MCP tools, the dashboard and start commands: a larger
// message is an error (connect's CodeResourceExhausted, ErrRateLimited
// here) read into memory no further than this, where before a message of
// any size was held whole. An honest agent sends output in chunks of
// 32 KiB and lists at most 100,000 entries (~20 MiB of JSON with common
// paths).
const MaxAgentMessage = 32 << 20

// agentReadMax is MaxAgentMessage; tests lower it.
var agentReadMax = MaxAgentMessage

// SandboxConn is the traffic side of one sandbox: commands and files. It
// goes through the daemon's origin, routed by the E2b-Sandbox-Id and
// E2b-Sandbox-Port headers and authenticated by X-Access-Token, exactly as
// the E2B SDK does with E2B_SANDBOX_URL set. It is safe for concurrent use.
type SandboxConn struct {
	id      string
	baseURL string
	http    *http.Client
	proc    processconnect.ProcessClient
	fs      filesystemconnect.FilesystemClient
}

// Sandbox returns a connection to sb, using its access token.
func (c *Client) Sandbox(sb *Sandbox) *SandboxConn {
	return c.SandboxByID(sb.SandboxID, sb.EnvdAccessToken)
}

// SandboxByID returns a connection to the sandbox id with the access token
// token (from Create, Connect or Get).
func (c *Client) SandboxByID(id, token string) *SandboxConn {
	hc := &http.Client{
		Transport:     &routeTransport{base: c.http.Transport, id: id, token: token, ua: c.userAgent},
		CheckRedirect: c.http.CheckRedirect,
		Jar:           c.http.Jar,
		Timeout:       c.http.Timeout,
	}
	opts := []connect.ClientOption{connect.WithProtoJSON(), connect.WithReadMaxBytes(agentReadMax)}
	return &SandboxConn{
		id:      id,
		baseURL: c.baseURL,
		http:    hc,
		proc:    processconnect.NewProcessClient(hc, c.baseURL, opts...),
		fs:      filesystemconnect.NewFilesystemClient(hc, c.baseURL, opts...),
	}
}

// ID returns the sandbox's ID.
func (s *SandboxConn) ID() string { return s.id }

// routeTransport adds the sandbox routing and auth headers to each request.
type routeTransport struct {
	base      http.RoundTripper
	id, token string
	ua        string
}

func (t *routeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("E2b-Sandbox-Id", t.id)
	if r.Header.Get("E2b-Sandbox-Port") == "" {
		r.Header.Set("E2b-Sandbox-Port", strconv.Itoa(EnvdPort))
	}
	if t.token != "" {
		r.Header.Set("X-Access-Token", t.token)
	}
	r.Header.Set("User-Agent", t.ua)
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err != nil || resp.StatusCode < 300 {
		return resp, err
	}
	return proxyError(resp)
}

// proxyError turns an error the daemon's proxy answered itself (E2B's
// {code: <int>, message} body, e.g. 404 for an unknown sandbox or 401 for a
// bad token) into an *APIError. Errors from envd, whose code is a Connect
// code string, are passed through for the Connect client to decode.
func proxyError(resp *http.Response) (*http.Response, error) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var body struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &body) == nil && len(body.Code) > 0 && body.Code[0] != '"' {
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		return nil, parseAPIError(resp)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp, nil
}

// basicUser is the Authorization header envd reads the user from: Basic
// auth with the user name and an empty password.
func basicUser(user string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"))
}
