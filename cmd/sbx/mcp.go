package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/mcpserver"
	"github.com/sbx-dev/sbx/internal/version"
)

// mcpCmd is `sbx mcp`: an MCP server on stdio, a plain client of the sbx
// API found through --url/--api-key (SBX_URL/SBX_API_KEY). At the end of
// its input it answers the requests it has read, then exits.
type mcpCmd struct{}

// Help is the long help of sbx mcp.
func (*mcpCmd) Help() string {
	return `Serves sbx sandboxes as MCP tools over stdio (for Claude Desktop, IDE
agents): create_sandbox, run_command, run_code, read_file, write_file,
list_files, kill_sandbox. It is a client of the daemon at --url with
--api-key. In an MCP client's configuration (Claude Desktop's
claude_desktop_config.json):

  {"mcpServers": {"sbx": {"command": "/path/to/sbx", "args": ["mcp"],
    "env": {"SBX_URL": "http://127.0.0.1:3000", "SBX_API_KEY": "e2b_..."}}}}

The daemon also serves the tools over HTTP at /mcp (same key).`
}

func (*mcpCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	s := mcpserver.New(newMCPBackend(c), version.Version)
	if err := s.Run(e.ctx, mcpserver.DrainingTransport(e.ctx, e.std.in, e.std.out)); err != nil && e.ctx.Err() == nil {
		e.errorf("%v", err)
		return 1
	}
	return 0
}

// mcpHTTPHandler serves the same tools over streamable HTTP on the daemon
// (/mcp). Each session is a client of the daemon's own API at apiURL
// through rt (nil: http.DefaultTransport), authenticated with the caller's
// X-API-Key (or Authorization: Bearer <key>). Every
// request must carry a key that admit accepts (else 401 with the API's
// {code, message}), so that only the API's callers make sessions, and a
// revoked key's session ends at its next request; admit also holds each
// request to the API's rate limits (429 past the team's bucket, which its
// API calls share; unknown keys per address); a session idle for
// mcpSessionIdle is closed. A team holds at most mcpMaxSessions open
// sessions (each is a server in the daemon's memory; 429 past it). A
// session answers only the key that made it (403 for another valid key):
// it acts with that key, so its id must not be a credential of its own.
func mcpHTTPHandler(apiURL string, rt http.RoundTripper, admit func(w http.ResponseWriter, r *http.Request, key string) (team string, ok bool)) http.Handler {
	sessions := newMCPSessions(mcpMaxSessions)
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		srv := mcpserver.New(newMCPBackend(client.New(apiURL, mcpKey(r), client.WithHTTPClient(&http.Client{Transport: rt}))), version.Version)
		sessions.made(r, srv)
		return srv
	}, &mcp.StreamableHTTPOptions{SessionTimeout: mcpSessionIdle})
	bound := mcpauth.RequireBearerToken(keyIdentity, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := mcpKey(r)
		team, ok := admit(w, r, key) // answers 401 or 429 itself
		if !ok {
			return
		}
		r = r.Clone(r.Context())
		// the SDK binds sessions to the bearer's identity
		r.Header.Set("Authorization", "Bearer "+key)
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" { // makes a session
			var release func()
			if r, release = sessions.reserve(r, team); release == nil {
				api.WriteError(w, http.StatusTooManyRequests, fmt.Sprintf(
					"this team has %d open MCP sessions, the most it may: end one (DELETE /mcp) or let one idle out (%s)", sessions.max, mcpSessionIdle))
				return
			}
			defer release()
		}
		bound.ServeHTTP(w, r)
	})
}

// keyIdentity is the identity the MCP SDK binds a session to: the key's
// SHA-256 (the key itself is never kept). The key was checked already.
func keyIdentity(_ context.Context, key string, _ *http.Request) (*mcpauth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(key))
	return &mcpauth.TokenInfo{UserID: hex.EncodeToString(sum[:])}, nil
}

// mcpSessionIdle closes an /mcp session no request has used for this long
// (MCP clients rarely end theirs with DELETE).
const mcpSessionIdle = 30 * time.Minute

// mcpKey is the API key of an /mcp request: X-API-Key, else a Bearer token.
func mcpKey(r *http.Request) string {
	key := r.Header.Get("X-API-Key")
	if b, ok := cutBearer(r.Header.Get("Authorization")); ok && key == "" {
		key = b
	}
	return key
}

func cutBearer(h string) (string, bool) {
	const p = "Bearer "
	if len(h) > len(p) && h[:len(p)] == p {
		return h[len(p):], true
	}
	return "", false
}

// mcpBackend implements mcpserver.Backend over package client. It caches
// each sandbox's access token.
type mcpBackend struct {
	c     *client.Client
	mu    sync.Mutex
	conns map[string]*client.SandboxConn
}

func newMCPBackend(c *client.Client) *mcpBackend {
	return &mcpBackend{c: c, conns: map[string]*client.SandboxConn{}}
}

func (b *mcpBackend) conn(ctx context.Context, id string) (*client.SandboxConn, error) {
	b.mu.Lock()
	sc, ok := b.conns[id]
	b.mu.Unlock()
	if ok {
		return sc, nil
	}
	sb, err := b.c.Connect(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	sc = b.c.Sandbox(sb)
	b.mu.Lock()
	b.conns[id] = sc
	b.mu.Unlock()
	return sc, nil
}

func (b *mcpBackend) CreateSandbox(ctx context.Context, tmpl string, timeout time.Duration, envs map[string]string) (string, error) {
	sb, err := b.c.Create(ctx, client.CreateRequest{TemplateID: tmpl, Timeout: timeout, EnvVars: envs})
	if err != nil {
		return "", err
	}
	b.mu.Lock()
	b.conns[sb.SandboxID] = b.c.Sandbox(sb)
	b.mu.Unlock()
	return sb.SandboxID, nil
}
