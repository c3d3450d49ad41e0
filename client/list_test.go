package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/client/clienttest"
	"github.com/sbx-dev/sbx/internal/api"
)

// TestListQuery checks the query against what the e2b 2.51.0 JS SDK sends
// (contract §2: {a:'b c'} is metadata=a%3Db%252520c on the wire). The other
// metadata expectations were computed with Node from the SDK's own code in
// dist/index.js (ListPaginator.nextItems): encodeURIComponent of
// new URLSearchParams({[encodeURIComponent(k)]: encodeURIComponent(v)}).
func TestListQuery(t *testing.T) {
	tests := []struct {
		name string
		opts client.ListOptions
		want string
	}{
		{"none", client.ListOptions{}, ""},
		{"sdk probe", client.ListOptions{Metadata: map[string]string{"a": "b c"}}, "metadata=a%3Db%252520c"},
		{"two keys sorted", client.ListOptions{Metadata: map[string]string{"z": "1", "y": "2"}}, "metadata=y%3D2%26z%3D1"},
		{"reserved chars", client.ListOptions{Metadata: map[string]string{"k&=": "v+/%"}}, "metadata=k%252526%25253D%3Dv%25252B%25252F%252525"},
		{"js keeps !*'()", client.ListOptions{Metadata: map[string]string{"a": "(x)!*'~"}}, "metadata=a%3D%2528x%2529%2521*%2527%257E"},
		{"state and more", client.ListOptions{State: []string{"running", "paused"}, Template: "base", Order: "asc", Limit: 5,
			StartedAfter: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
			"limit=5&state=running%2Cpaused&startedAfter=2026-01-02T03%3A04%3A05Z&template=base&order=asc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := newTest(t)
			if _, err := c.List(context.Background(), tt.opts); err != nil {
				t.Fatal(err)
			}
			r := lastReq(t, srv)
			if r.Path != "/v2/sandboxes" || r.RawQuery != tt.want {
				t.Errorf("got %s?%s, want /v2/sandboxes?%s", r.Path, r.RawQuery, tt.want)
			}
		})
	}
}

// TestMetadataFilterRoundTrip checks that the daemon's decoder (internal/api)
// recovers exactly the filter the client sent.
func TestMetadataFilterRoundTrip(t *testing.T) {
	tests := []map[string]string{
		{"a": "b c"},
		{"user": "alice@example.com", "job": "x=1&y=2"},
		{"ключ": "значение ✓", "pct": "100%", "plus": "a+b", "empty": ""},
	}
	for i, md := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			srv, c := newTest(t)
			if _, err := c.List(context.Background(), client.ListOptions{Metadata: md}); err != nil {
				t.Fatal(err)
			}
			q, err := url.ParseQuery(lastReq(t, srv).RawQuery)
			if err != nil {
				t.Fatal(err)
			}
			got, err := api.ParseMetadataFilter(q.Get("metadata"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(md, got); diff != "" {
				t.Errorf("decoded filter (-sent +decoded):\n%s", diff)
			}
		})
	}
}

func TestListPagination(t *testing.T) {
	tests := []struct {
		name      string
		n, page   int
		filter    map[string]string
		wantItems int
		wantCalls int
	}{
		{"empty", 0, 3, nil, 0, 1},
		{"one page", 3, 3, nil, 3, 1},
		{"three pages", 7, 3, nil, 7, 3},
		{"filtered", 7, 2, map[string]string{"even": "yes"}, 4, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := newTest(t)
			srv.PageSize = tt.page
			for i := range tt.n {
				md := map[string]string{"i": fmt.Sprint(i)}
				if i%2 == 0 {
					md["even"] = "yes"
				}
				srv.Add(&clienttest.Sandbox{ID: fmt.Sprintf("sb%018d", i), TemplateID: "base", Metadata: md, StartedAt: time.Now()})
			}
			got, err := c.List(context.Background(), client.ListOptions{Metadata: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.wantItems || len(srv.Requests()) != tt.wantCalls {
				t.Errorf("got %d items in %d calls, want %d in %d", len(got), len(srv.Requests()), tt.wantItems, tt.wantCalls)
			}
			seen := map[string]bool{}
			for _, sb := range got {
				if seen[sb.SandboxID] {
					t.Errorf("duplicate %s", sb.SandboxID)
				}
				seen[sb.SandboxID] = true
			}
		})
	}
}

func TestListRepeatedToken(t *testing.T) {
	srv, c := newTest(t)
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("X-Next-Token", "same")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]"))
		return true
	}
	_, err := c.List(context.Background(), client.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "repeated page token") {
		t.Fatalf("err = %v, want repeated page token", err)
	}
}
