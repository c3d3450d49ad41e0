package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/client/clienttest"
)

// TestHeadBuffer: a command's stream through /mcp keeps its first max bytes
// and counts the rest (what a sandbox prints is held in the daemon).
func TestHeadBuffer(t *testing.T) {
	h := &headBuffer{max: 8}
	for range 1000 {
		if n, err := h.Write([]byte("0123456789")); n != 10 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	if got := h.String(); !strings.HasPrefix(got, "01234567\n[9992 more bytes not shown]") || h.b.Len() != 8 {
		t.Fatalf("kept %d bytes: %q", h.b.Len(), got)
	}
	small := &headBuffer{max: 8}
	_, _ = small.Write([]byte("ok"))
	if small.String() != "ok" {
		t.Fatalf("small output: %q", small.String())
	}
}

// TestMCPHostileAgentMessage: a sandbox whose agent answers a listing with
// a message past client.MaxAgentMessage gets a tool error saying so from
// list_files (the daemon reads no further than the bound), not a listing.
func TestMCPHostileAgentMessage(t *testing.T) {
	srv := clienttest.NewServer(t, "k")
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/ListDir") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"entries":[{"type":"FILE_TYPE_FILE","name":"`)
		chunk := strings.Repeat("x", 64<<10)
		for n := 0; n <= client.MaxAgentMessage; n += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return true
			}
		}
		_, _ = io.WriteString(w, `"}]}`)
		return true
	}
	c := client.New(srv.URL, "k")
	sb, err := c.Create(context.Background(), client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	es, err := newMCPBackend(c).ListFiles(context.Background(), sb.SandboxID, "/", 1)
	if err == nil || !strings.Contains(err.Error(), "larger than configured max") || len(es) != 0 {
		t.Fatalf("list_files of a hostile agent: %d entries, %v; want the message-size error", len(es), err)
	}
}
