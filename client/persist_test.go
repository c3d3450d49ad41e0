package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// TestPersist: the requests Pause, Fork and Snapshot send, and their
// answers decoded.
func TestPersist(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		b, _ := json.Marshal(body)
		got = append(got, r.Method+" "+r.URL.Path+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/sandboxes/a/pause":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"code":409,"message":"already paused"}`))
		case "/sandboxes/a/fork":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`[{"sandbox":{"sandboxID":"b","envdAccessToken":"t"}},{"error":{"code":429,"message":"busy"}}]`))
		case "/sandboxes/a/snapshots":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"snapshotID":"snapx","names":["n"]}`))
		}
	}))
	defer srv.Close()
	c := client.New(srv.URL, "k")
	ctx := context.Background()
	if err := c.Pause(ctx, "a", false); err == nil {
		t.Fatal("pause: want the 409")
	}
	kids, err := c.Fork(ctx, "a", 2, 30*time.Second)
	if err != nil || len(kids) != 2 || kids[0].Sandbox.SandboxID != "b" || kids[1].Error.Code != 429 {
		t.Fatalf("fork: %+v %v", kids, err)
	}
	s, err := c.Snapshot(ctx, "a", "n")
	if err != nil || s.SnapshotID != "snapx" {
		t.Fatalf("snapshot: %+v %v", s, err)
	}
	want := []string{`POST /sandboxes/a/pause {"memory":false}`, `POST /sandboxes/a/fork {"count":2,"timeout":30}`,
		`POST /sandboxes/a/snapshots {"name":"n"}`}
	for i, w := range want {
		if i >= len(got) || got[i] != w {
			t.Fatalf("requests %q, want %q", got, want)
		}
	}
}
