package integration

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// TestClusterMCP: /mcp and /dashboard through an API front over two nodes,
// with and without the cluster secret. An MCP session (the official Go
// SDK client) made through the front keeps answering across requests (its
// session lives in one node's memory), and its tools reach the node's API
// (with the secret, a node answers only signed requests, its own MCP
// client's included); a dashboard sign-in through the front stays signed
// in across page loads.
func TestClusterMCP(t *testing.T) {
	requirements(t, "crun")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	secret := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(secret, []byte("an-integration-test-cluster-secret-of-40b"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name  string
		extra []string
	}{{"open", nil}, {"secret", []string{"--cluster-secret-file", secret}}} {
		t.Run(mode.name, func(t *testing.T) {
			startClusterNode(t, "crun", url, 1, "", mode.extra...)
			startClusterNode(t, "crun", url, 2, "", mode.extra...)
			waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})
			time.Sleep(clusterTTL / 2) // a heartbeat: reports with runtimes
			fr := startFront(t, url, mode.extra...)
			sbs := spread(t, fr, admin)
			clusterMCPSession(t, fr, sbs)
			s := dashSignIn(t, fr, apiKey)
			for i := range 8 {
				if code, _ := s.do("GET", "/dashboard/sandboxes", false, nil); code != 200 {
					t.Fatalf("dashboard page %d through the front: %d, want 200 (signed in)", i, code)
				}
			}
			dashboardFiles(t, fr, sbs, s)
		})
	}
}

// dashboardFiles reads a file of sandboxes on both nodes through the
// dashboard, which reaches every node's sandboxes through its node's
// loopback front, and lists them all. Before, the dashboard's node served
// only its own sandboxes' files (404 for the other node's) and listed only
// its own.
func dashboardFiles(t *testing.T, fr *daemon, sbs []*sandbox, s *dashSession) {
	for _, sb := range sbs {
		code, body := s.do("GET", "/dashboard/files/"+sb.ID+"/download?path=/etc/hostname", false, nil)
		if code != 200 {
			t.Fatalf("dashboard file of %s through the front: %d %s", sb.ID, code, body)
		}
	}
	code, body := s.do("GET", "/dashboard/api/v2/sandboxes?limit=100", false, nil)
	for _, sb := range sbs {
		if code != 200 || !strings.Contains(string(body), sb.ID) {
			t.Fatalf("the dashboard's listing lacks %s: %d %s", sb.ID, code, body)
		}
	}
}

// spread creates sandboxes through the front until both nodes hold some.
func spread(t *testing.T, fr *daemon, admin *store.Store) []*sandbox {
	var sbs []*sandbox
	nodes := map[string]bool{}
	for i := 0; i < 12 && (len(nodes) < 2 || len(sbs) < 4); i++ {
		sb := fr.create(map[string]any{"timeout": 120})
		sbs = append(sbs, sb)
		node, _, err := admin.SandboxOwner(context.Background(), sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		nodes[node] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("12 creates through the front all landed on one node: %v", nodes)
	}
	return sbs
}

// clusterMCPSession makes an MCP session through the front and uses it
// for several requests: list, create, commands, kill; and runs a command
// in each of sbs, which are on both nodes (before, only the session's
// node's sandboxes were found).
func clusterMCPSession(t *testing.T, fr *daemon, sbs []*sandbox) {
	ctx := context.Background()
	hc := &http.Client{Transport: headerRT{"X-API-Key", apiKey}}
	c := mcp.NewClient(&mcp.Implementation{Name: "sbx-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: fr.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("initialize through the front: %v", err)
	}
	defer cs.Close()
	for i := range 4 {
		if tools, err := cs.ListTools(ctx, nil); err != nil || len(tools.Tools) < 7 {
			t.Fatalf("tools/list %d through the front: %v", i, err)
		}
	}
	r, text := callTool(t, ctx, cs, "create_sandbox", map[string]any{"timeout_seconds": 120})
	if r.IsError {
		t.Fatalf("create_sandbox through the front: %s", text)
	}
	id := strings.TrimPrefix(text, "created sandbox ")
	for i := range 3 {
		if r, out := callTool(t, ctx, cs, "run_command", map[string]any{"sandbox_id": id, "command": "echo via-mcp"}); r.IsError || !strings.Contains(out, "via-mcp") {
			t.Fatalf("run_command %d through the front: %q", i, out)
		}
	}
	if r, out := callTool(t, ctx, cs, "kill_sandbox", map[string]any{"sandbox_id": id}); r.IsError {
		t.Fatalf("kill_sandbox through the front: %q", out)
	}
	for _, sb := range sbs {
		if r, out := callTool(t, ctx, cs, "run_command", map[string]any{"sandbox_id": sb.ID, "command": "echo on-" + sb.ID}); r.IsError || !strings.Contains(out, "on-"+sb.ID) {
			t.Fatalf("run_command in %s through the front's MCP session: %q", sb.ID, out)
		}
	}
}
