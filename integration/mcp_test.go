package integration

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCP drives the sbx MCP tools with the official Go MCP SDK client, over
// stdio (sbx mcp) and streamable HTTP (the daemon's /mcp), against a real
// daemon.
func TestMCP(t *testing.T) {
	d := startDaemon(t, "crun", "")
	sbxBin, _ := requirements(t)
	transports := map[string]func() mcp.Transport{
		"stdio": func() mcp.Transport {
			cmd := exec.Command(sbxBin, "mcp", "--url", d.url, "--api-key", apiKey)
			return &mcp.CommandTransport{Command: cmd}
		},
		"http": func() mcp.Transport {
			hc := &http.Client{Transport: headerRT{"X-API-Key", apiKey}}
			return &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: hc}
		},
	}
	for name, tr := range transports {
		t.Run(name, func(t *testing.T) { mcpSession(t, tr()) })
	}
}

type headerRT struct{ k, v string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.k, h.v)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, tr mcp.Transport) {
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "sbx-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 7 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	call := func(name string, args map[string]any) (*mcp.CallToolResult, string) {
		t.Helper()
		return callTool(t, ctx, cs, name, args)
	}
	_, text := call("create_sandbox", map[string]any{"timeout_seconds": 120})
	id := strings.TrimPrefix(text, "created sandbox ")
	if r, out := call("run_command", map[string]any{"sandbox_id": id, "command": "echo hi; exit 4"}); r.IsError || !strings.Contains(out, "exit code 4") || !strings.Contains(out, "hi") {
		t.Fatalf("run_command: %q", out)
	}
	call("write_file", map[string]any{"sandbox_id": id, "path": "notes/a.txt", "content": "hello mcp"})
	if _, out := call("read_file", map[string]any{"sandbox_id": id, "path": "/home/user/notes/a.txt"}); out != "hello mcp" {
		t.Fatalf("read_file: %q", out)
	}
	if _, out := call("list_files", map[string]any{"sandbox_id": id, "path": "/home/user/notes"}); !strings.Contains(out, "a.txt") {
		t.Fatalf("list_files: %q", out)
	}
	if r, _ := call("read_file", map[string]any{"sandbox_id": id, "path": "/nope"}); !r.IsError {
		t.Fatal("missing file was not a tool error")
	}
	if r, _ := call("kill_sandbox", map[string]any{"sandbox_id": id}); r.IsError {
		t.Fatal("kill failed")
	}
	if r, _ := call("run_command", map[string]any{"sandbox_id": id, "command": "true"}); !r.IsError {
		t.Fatal("command in a killed sandbox was not a tool error")
	}
}

// callTool calls an MCP tool; it returns the result and its text content.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return r, b.String()
}
