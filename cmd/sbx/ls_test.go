package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/client/clienttest"
)

func TestLs(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	now := time.Now()
	srv.Add(&clienttest.Sandbox{ID: "aaaaaaaaaaaaaaaaaaaa", TemplateID: "base", Metadata: map[string]string{"team": "a", "x": "1"}, StartedAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour)})
	srv.Add(&clienttest.Sandbox{ID: "bbbbbbbbbbbbbbbbbbbb", TemplateID: "code-interpreter-v1", Metadata: map[string]string{"team": "b c"}, StartedAt: now, EndAt: now.Add(time.Minute)})
	tests := []struct {
		name    string
		args    []string
		code    int
		has     []string
		hasNot  []string
		jsonIDs []string
	}{
		{"table", nil, 0, []string{"ID  ", "TEMPLATE", "METADATA", "aaaaaaaaaaaaaaaaaaaa", "team=a,x=1", "code-interpreter-v1", "team=b c", "in 1h0m0s"}, nil, nil},
		{"metadata filter", []string{"--metadata", "team=b c"}, 0, []string{"bbbbbbbbbbbbbbbbbbbb"}, []string{"aaaaaaaaaaaaaaaaaaaa"}, nil},
		{"state paused", []string{"--state", "paused"}, 0, []string{"ID"}, []string{"aaaa", "bbbb"}, nil},
		{"json", []string{"--json"}, 0, nil, nil, []string{"bbbbbbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaa"}},
		{"json empty", []string{"--json", "--metadata", "team=none"}, 0, []string{"[]"}, nil, nil},
		{"bad state", []string{"--state", "dead"}, exitUsage, nil, nil, nil},
		{"bad metadata", []string{"--metadata", "x"}, exitUsage, nil, nil, nil},
		{"stray arg", []string{"foo"}, exitUsage, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := cli(t, context.Background(), srv, "ls", "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			for _, s := range tt.has {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(out, s) {
					t.Errorf("output has %q:\n%s", s, out)
				}
			}
			if tt.jsonIDs != nil {
				checkJSONIDs(t, out, tt.jsonIDs)
			}
		})
	}
}

func checkJSONIDs(t *testing.T, out string, want []string) {
	t.Helper()
	var list []client.ListedSandbox
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var got []string
	for _, sb := range list {
		got = append(got, sb.SandboxID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ids %v, want %v", got, want)
	}
}

func TestKill(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
		left   int
	}{
		{"one", []string{"aaaaaaaaaaaaaaaaaaaa"}, 0, "aaaaaaaaaaaaaaaaaaaa\n", "", 1},
		{"both", []string{"aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb"}, 0, "aaaaaaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbbbbbb\n", "", 0},
		{"one missing", []string{"nosuch", "bbbbbbbbbbbbbbbbbbbb"}, 1, "bbbbbbbbbbbbbbbbbbbb\n", "sbx kill: nosuch: no such sandbox\n", 1},
		{"no ids", nil, exitUsage, "", "sbx kill: no sandbox ID given\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, testKey)
			srv.Add(&clienttest.Sandbox{ID: "aaaaaaaaaaaaaaaaaaaa", TemplateID: "base"})
			srv.Add(&clienttest.Sandbox{ID: "bbbbbbbbbbbbbbbbbbbb", TemplateID: "base"})
			code, out, stderr := cli(t, context.Background(), srv, "kill", "", tt.args...)
			if code != tt.code || out != tt.stdout || !strings.HasPrefix(stderr, tt.stderr) {
				t.Errorf("got %d, %q, %q; want %d, %q, %q", code, out, stderr, tt.code, tt.stdout, tt.stderr)
			}
			if n := len(srv.Sandboxes()); n != tt.left {
				t.Errorf("%d sandboxes left, want %d", n, tt.left)
			}
		})
	}
}
