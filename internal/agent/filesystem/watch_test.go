package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
)

// collect reads stream messages until it has seen every wanted "type name"
// event, or fails after a timeout.
func collect(t *testing.T, st *connect.ServerStreamForClient[fspb.WatchDirResponse], want ...string) {
	t.Helper()
	missing := map[string]bool{}
	for _, w := range want {
		missing[w] = true
	}
	for len(missing) > 0 && st.Receive() {
		if fe := st.Msg().GetFilesystem(); fe != nil {
			key := fe.Type.String() + " " + fe.Name
			if missing[key] && fe.Entry == nil && fe.Type == fspb.EventType_EVENT_TYPE_CREATE {
				t.Errorf("no entry in %v", fe)
			}
			delete(missing, key)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("missing events %v (stream err %v)", missing, st.Err())
	}
}

func watch(t *testing.T, e *env, req *fspb.WatchDirRequest, hdr map[string]string) *connect.ServerStreamForClient[fspb.WatchDirResponse] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	r := as("", req)
	for k, v := range hdr {
		r.Header().Set(k, v)
	}
	st, err := e.client.WatchDir(ctx, r)
	must(t, err)
	t.Cleanup(func() { st.Close() })
	if !st.Receive() || st.Msg().GetStart() == nil {
		t.Fatalf("first message is not start: %v %v", st.Msg(), st.Err())
	}
	return st
}

func TestWatchDirRecursive(t *testing.T) {
	e := newEnv(t)
	st := watch(t, e, &fspb.WatchDirRequest{Path: "~", Recursive: true, IncludeEntry: true}, nil)
	must(t, os.MkdirAll(filepath.Join(e.home, "a", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.home, "a", "b", "f.txt"), []byte("x"), 0o644))
	collect(t, st, "EVENT_TYPE_CREATE a", "EVENT_TYPE_CREATE a/b", "EVENT_TYPE_CREATE a/b/f.txt")
	must(t, os.WriteFile(filepath.Join(e.home, "a", "b", "f.txt"), []byte("y"), 0o644))
	must(t, os.Remove(filepath.Join(e.home, "a", "b", "f.txt")))
	collect(t, st, "EVENT_TYPE_WRITE a/b/f.txt", "EVENT_TYPE_REMOVE a/b/f.txt")
}

func TestWatchDirFlat(t *testing.T) {
	e := newEnv(t)
	st := watch(t, e, &fspb.WatchDirRequest{Path: e.home}, nil)
	must(t, os.Mkdir(filepath.Join(e.home, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.home, "d", "hidden"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(e.home, "top"), nil, 0o644))
	for st.Receive() {
		fe := st.Msg().GetFilesystem()
		if fe == nil {
			continue
		}
		if fe.Name == "d/hidden" {
			t.Fatalf("non-recursive watch saw %v", fe)
		}
		if fe.Name == "top" {
			if fe.Entry != nil {
				t.Fatalf("entry sent without include_entry")
			}
			return
		}
	}
	t.Fatalf("stream ended: %v", st.Err())
}

func TestWatchDirKeepalive(t *testing.T) {
	e := newEnv(t)
	st := watch(t, e, &fspb.WatchDirRequest{Path: "~"}, map[string]string{"Keepalive-Ping-Interval": "1"})
	start := time.Now()
	if !st.Receive() || st.Msg().GetKeepalive() == nil {
		t.Fatalf("want keepalive, got %v %v", st.Msg(), st.Err())
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 3*time.Second {
		t.Fatalf("keepalive after %v", d)
	}
}

func TestWatchDirErrors(t *testing.T) {
	e := newEnv(t)
	must(t, os.WriteFile(filepath.Join(e.home, "f"), nil, 0o644))
	tests := []struct {
		name, path string
		code       connect.Code
	}{
		{"regular file", "f", connect.CodeInvalidArgument},
		{"missing", "nope", connect.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := e.client.WatchDir(context.Background(), as("", &fspb.WatchDirRequest{Path: tt.path}))
			must(t, err)
			defer st.Close()
			if st.Receive() {
				t.Fatalf("got %v", st.Msg())
			}
			if errCode(st.Err()) != tt.code {
				t.Fatalf("err = %v, want %v", st.Err(), tt.code)
			}
			_, err = e.client.CreateWatcher(context.Background(), as("", &fspb.CreateWatcherRequest{Path: tt.path}))
			if errCode(err) != tt.code {
				t.Fatalf("CreateWatcher err = %v, want %v", err, tt.code)
			}
		})
	}
}

func TestPolledWatcher(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	res, err := e.client.CreateWatcher(ctx, as("", &fspb.CreateWatcherRequest{Path: "~", Recursive: true}))
	must(t, err)
	id := res.Msg.WatcherId
	must(t, os.MkdirAll(filepath.Join(e.home, "p", "q"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.home, "p", "q", "f"), nil, 0o644))
	seen := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); !seen["p/q/f"] && time.Now().Before(deadline); {
		ev, err := e.client.GetWatcherEvents(ctx, as("", &fspb.GetWatcherEventsRequest{WatcherId: id}))
		must(t, err)
		for _, fe := range ev.Msg.Events {
			seen[fe.Name] = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !seen["p"] || !seen["p/q/f"] {
		t.Fatalf("seen %v", seen)
	}
	_, err = e.client.RemoveWatcher(ctx, as("", &fspb.RemoveWatcherRequest{WatcherId: id}))
	must(t, err)
	for _, call := range []func() error{
		func() error {
			_, err := e.client.GetWatcherEvents(ctx, as("", &fspb.GetWatcherEventsRequest{WatcherId: id}))
			return err
		},
		func() error {
			_, err := e.client.RemoveWatcher(ctx, as("", &fspb.RemoveWatcherRequest{WatcherId: id}))
			return err
		},
	} {
		if err := call(); errCode(err) != connect.CodeNotFound {
			t.Fatalf("after remove: %v", err)
		}
	}
}

func TestPolledWatcherBounds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	res, err := e.client.CreateWatcher(ctx, as("", &fspb.CreateWatcherRequest{Path: "~"}))
	must(t, err)
	for i := 0; i < MaxWatcherEvents+500; i++ {
		must(t, os.WriteFile(filepath.Join(e.home, "f"), []byte{byte(i)}, 0o644))
	}
	time.Sleep(300 * time.Millisecond)
	ev, err := e.client.GetWatcherEvents(ctx, as("", &fspb.GetWatcherEventsRequest{WatcherId: res.Msg.WatcherId}))
	must(t, err)
	if n := len(ev.Msg.Events); n == 0 || n > MaxWatcherEvents {
		t.Fatalf("%d events buffered", n)
	}
	for i := 1; i < MaxWatchers; i++ {
		_, err := e.client.CreateWatcher(ctx, as("", &fspb.CreateWatcherRequest{Path: "~"}))
		must(t, err)
	}
	if _, err := e.client.CreateWatcher(ctx, as("", &fspb.CreateWatcherRequest{Path: "~"})); errCode(err) != connect.CodeResourceExhausted {
		t.Fatalf("watcher %d: %v", MaxWatchers+1, err)
	}
}
