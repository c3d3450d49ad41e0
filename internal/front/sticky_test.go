package front

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestFrontSticky: /mcp goes to one node per API key (X-API-Key or Bearer),
// every time, keys spread over the nodes, and a key stays on its node when
// another node leaves; /dashboard always goes to one node. Before, both
// went to a random node, which knew none of the sessions of the others.
func TestFrontSticky(t *testing.T) {
	a, b, c := fakeNode(t, "a"), fakeNode(t, "b"), fakeNode(t, "c")
	d := &fakeDir{nodes: []*store.Node{node("a", a.URL, 0), node("b", b.URL, 0), node("c", c.URL, 0)}}
	f := newFront(d)
	to := func(path string, hdr ...string) string {
		t.Helper()
		code, body := do(t, f, "POST", path, "", hdr...)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		name, _, _ := strings.Cut(body, " ")
		return name
	}
	home := map[string]string{}
	for i := range 12 {
		key := fmt.Sprintf("key-%d", i)
		home[key] = to("/mcp", "X-API-Key", key)
		for range 8 {
			if n := to("/mcp", "X-API-Key", key); n != home[key] {
				t.Fatalf("/mcp with %s went to %s, then %s", key, home[key], n)
			}
		}
		f2 := newFront(&fakeDir{nodes: []*store.Node{d.nodes[2], d.nodes[0], d.nodes[1]}}) // another front, nodes listed in another order
		if n := to2(t, f2, key); n != home[key] {
			t.Fatalf("/mcp with %s: %s through one front, %s through another", key, home[key], n)
		}
	}
	if spread := len(uniq(home)); spread < 2 {
		t.Fatalf("12 keys all on one node: %v", home)
	}
	dash := to("/dashboard/login")
	for _, p := range []string{"/dashboard", "/dashboard/sandboxes", "/dashboard/api/sandboxes", "/dashboard/term/x"} {
		if n := to(p, "X-API-Key", "other"); n != dash {
			t.Fatalf("%s went to %s, /dashboard/login to %s", p, n, dash)
		}
	}
	var gone string // a node, and the keys that were not on it stay where they were
	for _, n := range []string{"a", "b", "c"} {
		if n != home["key-0"] {
			gone = n
		}
	}
	kept := []*store.Node{}
	for _, n := range d.nodes {
		if n.ID != gone {
			kept = append(kept, n)
		}
	}
	d.nodes = kept
	f = newFront(d)
	for key, n := range home {
		if got := to2(t, f, key); n != gone && got != n {
			t.Fatalf("node %s left: %s moved from %s to %s", gone, key, n, got)
		}
	}
}

// to2 is the node /mcp with key as a Bearer token goes to through f.
func to2(t *testing.T, f *Front, key string) string {
	t.Helper()
	code, body := do(t, f, "POST", "/mcp", "", "X-API-Key", "", "Authorization", "Bearer "+key)
	if code != 200 {
		t.Fatalf("/mcp: %d %s", code, body)
	}
	name, _, _ := strings.Cut(body, " ")
	return name
}

func uniq(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, v := range m {
		out[v] = true
	}
	return out
}
