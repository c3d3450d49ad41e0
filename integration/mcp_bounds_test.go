package integration

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// daemonHWM is the daemon process's peak resident memory (VmHWM) in bytes.
func (d *daemon) hwm(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestMCPOutputBounded (crun): what a sandbox sends back through the
// daemon's /mcp tools (a command's output, a code cell's, a file) is the
// sandbox's choice, and the daemon holds it in its own memory, shared by
// every tenant: each tool keeps a bounded part (the rest is counted, not
// kept) and a file past the bound is a tool error. Before, 512 MiB of a
// command's output, a code cell's and a 512 MiB file each went into
// the daemon's memory (and back to the caller) whole.
func TestMCPOutputBounded(t *testing.T) {
	d := startDaemon(t, "crun", "")
	ctx := context.Background()
	hc := &http.Client{Transport: headerRT{"X-API-Key", apiKey}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sbx-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (*mcp.CallToolResult, string) {
		t.Helper()
		return callTool(t, ctx, cs, name, args)
	}
	sb := d.create(map[string]any{"templateID": "code-interpreter-v1", "timeout": 600})
	base := d.hwm(t)
	const big = 256 << 20
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"run_command", map[string]any{"sandbox_id": sb.ID, "command": "head -c 256M /dev/zero | tr '\\0' a; echo; head -c 256M /dev/zero | tr '\\0' b >&2"}},
		{"run_code", map[string]any{"sandbox_id": sb.ID, "code": "import sys\nfor _ in range(64): sys.stdout.write('c' * (1 << 20))"}},
		{"read_file", map[string]any{"sandbox_id": sb.ID, "path": "/home/user/big"}},
	}
	if out, code := sb.run("user", "head -c 256M /dev/zero | tr '\\0' d > /home/user/big", time.Minute); code != 0 {
		t.Fatalf("make a big file: %q", out)
	}
	for _, c := range cases {
		t0 := time.Now()
		r, text := call(c.tool, c.args)
		n := len(text)
		grown := d.hwm(t) - base
		t.Logf("%s: %d bytes back (error %v) in %v; the daemon's peak RSS grew %d MiB", c.tool, n, r.IsError, time.Since(t0), grown>>20)
		if n > 8<<20 {
			t.Errorf("%s: %d bytes came back, want a bounded part", c.tool, n)
		}
		if c.tool != "read_file" && (r.IsError || !strings.Contains(text, "not shown")) {
			t.Errorf("%s: no note of the output not shown", c.tool)
		}
		if c.tool == "read_file" && !r.IsError {
			t.Errorf("read_file of a 256 MiB file: not a tool error")
		}
		if grown > big/2 {
			t.Errorf("%s: the daemon's peak RSS grew %d MiB, want under %d", c.tool, grown>>20, big/2>>20)
		}
	}
	if r, text := call("run_command", map[string]any{"sandbox_id": sb.ID, "command": "echo small"}); r.IsError || !strings.Contains(text, "small") {
		t.Fatal("a small command after the big ones failed")
	}
}
