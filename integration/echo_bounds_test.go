package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHostileArgumentsNotEchoed (crun): what one team key sends is not
// multiplied into the daemon's memory, answers or log. Eight /mcp tool calls
// at once, each naming a 3 MB sandbox_id, are short tool errors and the
// daemon's peak RSS grows by less than 256 MiB (before: the id became a
// 9 MB escaped URL of the daemon's own API call and a 9 MB tool error,
// ~90 MB a call: 16 calls took the RSS from 144 MB to 1.5 GB); twenty
// creates naming a 900 KB runtime are 400s of under 1 KiB and the daemon's
// log grows by less than 64 KiB (before: each 400 and each "create failed"
// warning held the whole name, 35 MB of log from 40 such creates).
func TestHostileArgumentsNotEchoed(t *testing.T) {
	d := startDaemon(t, "crun", "")
	ctx := context.Background()
	hc := &http.Client{Transport: headerRT{"X-API-Key", apiKey}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sbx-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	base := d.hwm(t)
	id := strings.Repeat("%", 3<<20)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "kill_sandbox", Arguments: map[string]any{"sandbox_id": id}})
			if err != nil {
				t.Errorf("kill_sandbox: %v", err)
				return
			}
			if txt := toolText(r); !r.IsError || len(txt) > 1024 {
				t.Errorf("kill_sandbox of a 3 MB id: isError %v, %d bytes of text", r.IsError, len(txt))
			}
		})
	}
	wg.Wait()
	if grew := d.hwm(t) - base; grew > 256<<20 {
		t.Errorf("the daemon's peak RSS grew %d MiB for 8 tool calls", grew>>20)
	}
	logBefore := len(d.log.String())
	rt := strings.Repeat("z", 900<<10)
	for range 20 {
		var e struct{ Message string }
		if code := d.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base", "runtime": rt}, &e); code != 400 || len(e.Message) > 1024 {
			t.Fatalf("create with a 900 KB runtime: %d, a %d-byte message", code, len(e.Message))
		}
	}
	if grew := len(d.log.String()) - logBefore; grew > 64<<10 {
		t.Errorf("the daemon's log grew %d KiB for 20 refused creates", grew>>10)
	}
}

// toolText is the text content of a tool result.
func toolText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
