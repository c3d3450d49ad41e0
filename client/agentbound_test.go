package client_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sbx-dev/sbx/client"
)

// hostileSize is what the fake agent sends: 64× the bound the test sets.
const (
	testReadMax = 1 << 20
	hostileSize = 64 << 20
)

// junk writes n bytes of one JSON string's content, a chunk at a time (the
// fake agent never holds the message).
func junk(w io.Writer, n int) {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for ; n > 0; n -= len(chunk) {
		if _, err := w.Write(chunk[:min(n, len(chunk))]); err != nil {
			return
		}
	}
}

// hostileListDir answers ListDir with one entry whose name is size bytes,
// gzipped when zip is set (a small body that inflates past the bound).
func hostileListDir(zip bool) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/ListDir") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		var out io.Writer = w
		if zip {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			defer zw.Close()
			out = zw
		}
		_, _ = io.WriteString(out, `{"entries":[{"type":"FILE_TYPE_FILE","name":"`)
		junk(out, hostileSize)
		_, _ = io.WriteString(out, `"}]}`)
		return true
	}
}

// hostileStart answers process Start with one stream message of size bytes.
func hostileStart(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasSuffix(r.URL.Path, "/Start") {
		return false
	}
	w.Header().Set("Content-Type", "application/connect+json")
	var prefix [5]byte
	binary.BigEndian.PutUint32(prefix[1:], hostileSize)
	_, _ = w.Write(prefix[:])
	junk(w, hostileSize)
	return true
}

// TestAgentMessageBound: a Connect message from a sandbox's agent larger
// than the client's bound (plain, gzip-inflated, or a stream message) is
// an error with CodeResourceExhausted, and the client allocates a fraction
// of the message, not the message, on the way (the daemon reads agents with this
// client for the MCP tools, the dashboard and start commands).
func TestAgentMessageBound(t *testing.T) {
	if client.MaxAgentMessage != 32<<20 {
		t.Fatalf("MaxAgentMessage = %d", client.MaxAgentMessage)
	}
	defer client.SetAgentReadMax(testReadMax)()
	tests := []struct {
		name string
		hook func(http.ResponseWriter, *http.Request) bool
		call func(*client.SandboxConn) error
	}{
		{"unary", hostileListDir(false), listDir},
		{"unary gzip", hostileListDir(true), listDir},
		{"stream", hostileStart, func(sc *client.SandboxConn) error {
			_, err := sc.Run(context.Background(), client.RunRequest{Cmd: "true"}, io.Discard, io.Discard)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _, conn := newConn(t)
			srv.Hook = tt.hook
			before := totalAlloc()
			err := tt.call(conn)
			grew := totalAlloc() - before
			if connect.CodeOf(err) != connect.CodeResourceExhausted || !errors.Is(err, client.ErrRateLimited) ||
				!strings.Contains(err.Error(), "larger than configured max") {
				t.Fatalf("err = %v, want resource_exhausted: message larger than the max", err)
			}
			// the whole process's allocations (the fake agent's writes
			// too; more under -race): a quarter of the message at most
			if grew > hostileSize/4 {
				t.Fatalf("the client allocated %d bytes for a %d-byte message (bound %d)", grew, hostileSize, testReadMax)
			}
		})
	}
}

func listDir(sc *client.SandboxConn) error {
	_, err := sc.ListDir(context.Background(), "/", 1)
	return err
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}
