package client_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sbx-dev/sbx/client"
)

func TestFiles(t *testing.T) {
	srv, _, conn := newConn(t)
	ctx := context.Background()
	files := map[string]string{"/home/user/a.txt": "alpha", "/home/user/d/b.txt": "beta\x00bin", "/home/user/empty": ""}
	for p, data := range files {
		if err := conn.WriteFile(ctx, p, []byte(data), "user"); err != nil {
			t.Fatal(err)
		}
	}
	r := lastReq(t, srv)
	if r.Method != "POST" || r.Path != "/files" || r.Header.Get("Content-Type") != "application/octet-stream" ||
		r.Header.Get("E2b-Sandbox-Port") != "49983" || r.URL().Query().Get("username") != "user" {
		t.Errorf("upload request %s %s?%s %v", r.Method, r.Path, r.RawQuery, r.Header)
	}
	for p, want := range files {
		got, err := conn.ReadFile(ctx, p)
		if err != nil || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	tests := []struct {
		name  string
		call  func() (any, error)
		want  any
		isErr error
	}{
		{"stat file", func() (any, error) { e, err := conn.Stat(ctx, "/home/user/a.txt"); return name(e), err }, "a.txt file 5", nil},
		{"stat dir", func() (any, error) { e, err := conn.Stat(ctx, "/home/user/d"); return name(e), err }, "d dir 0", nil},
		{"list depth 1", func() (any, error) { return names(conn.ListDir(ctx, "/home/user", 1)) }, []string{"a.txt file 5", "d dir 0", "empty file 0"}, nil},
		{"list depth 2", func() (any, error) { return names(conn.ListDir(ctx, "/home/user", 2)) }, []string{"a.txt file 5", "d dir 0", "b.txt file 8", "empty file 0"}, nil},
		{"read missing", func() (any, error) { return conn.ReadFile(ctx, "/nope") }, []byte(nil), client.ErrNotFound},
		{"read relative", func() (any, error) { return conn.ReadFile(ctx, "rel") }, []byte(nil), client.ErrBadRequest},
		{"read empty path", func() (any, error) { return conn.ReadFile(ctx, "") }, []byte(nil), client.ErrBadRequest},
		{"stat missing", func() (any, error) { e, err := conn.Stat(ctx, "/nope"); return e, err }, (*client.EntryInfo)(nil), client.ErrNotFound},
		{"list missing", func() (any, error) { return conn.ListDir(ctx, "/nope", 1) }, []client.EntryInfo(nil), client.ErrNotFound},
		{"list negative depth", func() (any, error) { return conn.ListDir(ctx, "/", -1) }, []client.EntryInfo(nil), client.ErrBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call()
			if !errors.Is(err, tt.isErr) {
				t.Fatalf("err = %v, want %v", err, tt.isErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func name(e *client.EntryInfo) string {
	if e == nil {
		return ""
	}
	return e.Name + " " + e.Type + " " + itoa(e.Size)
}

func names(es []client.EntryInfo, err error) ([]string, error) {
	var out []string
	for i := range es {
		out = append(out, name(&es[i]))
	}
	return out, err
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
