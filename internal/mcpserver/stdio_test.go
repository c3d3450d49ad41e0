package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the server's writer and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDrainingTransportAnswersBeforeEOF: requests written before the input
// ends are all answered, even a slow tool call still running at EOF.
func TestDrainingTransportAnswersBeforeEOF(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"sandbox_id":"abcdefghij0123456789","command":"slow"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n"
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := New(&fakeBackend{files: map[string][]byte{}}, "test")
	if err := s.Run(ctx, DrainingTransport(ctx, strings.NewReader(in), &out)); err != nil && ctx.Err() != nil {
		t.Fatal(err)
	}
	ids := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     float64         `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		if m.Result != nil {
			ids[m.ID] = true
		}
	}
	if !ids[1] || !ids[2] || !ids[3] {
		t.Fatalf("answered %v, want 1, 2 and 3; output:\n%s", ids, out.String())
	}
	if !strings.Contains(out.String(), "out:slow") {
		t.Fatalf("slow call's result missing:\n%s", out.String())
	}
}

func TestCountMessages(t *testing.T) {
	tests := []struct {
		line      string
		req, resp int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 1, 0},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, 0},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, 0, 1},
		{`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]`, 2, 0},
		{`not json`, 0, 0},
	}
	for _, tt := range tests {
		if r, p := countMessages([]byte(tt.line), true), countMessages([]byte(tt.line), false); r != tt.req || p != tt.resp {
			t.Errorf("%s: got %d requests, %d responses; want %d, %d", tt.line, r, p, tt.req, tt.resp)
		}
	}
}
