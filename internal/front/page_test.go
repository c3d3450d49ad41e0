package front

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// listNode serves GET /v2/sandboxes over ids (newest first) as a node
// does: a page of limit after the nextToken's id, X-Next-Token when more
// are left, X-Total-Running all of them.
func listNode(t testing.TB, ids []string, started map[string]time.Time) *httptest.Server {
	enc := map[string]json.RawMessage{} // each item as a node writes it, made once
	for _, id := range ids {
		enc[id], _ = json.Marshal(map[string]any{"sandboxID": id, "startedAt": started[id],
			"templateID": "rki5dems9wqfm4r03t7g", "alias": "base", "clientID": "sbx", "cpuCount": 2, "memoryMB": 512,
			"diskSizeMB": 1024, "envdVersion": "0.2.0", "endAt": started[id].Add(time.Hour), "state": "running",
			"metadata": map[string]string{"suite": "list-1764121000000"}, "runtime": "crun", "volumeMounts": []any{}})
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		if limit == 0 {
			limit = 100
		}
		items := ids
		if q.Get("order") == "asc" {
			items = slices.Clone(ids)
			slices.Reverse(items)
		}
		if tok := q.Get("nextToken"); tok != "" {
			after, _ := base64.RawURLEncoding.DecodeString(tok)
			id, _, _ := strings.Cut(string(after), ":") // a node's token: "<id>:<start ns>"
			items = items[slices.Index(items, id)+1:]
		}
		if len(items) > limit {
			items = items[:limit]
			w.Header().Set("X-Next-Token", base64.RawURLEncoding.EncodeToString([]byte(items[limit-1])))
		}
		w.Header().Set("X-Total-Running", strconv.Itoa(len(ids)))
		out := []json.RawMessage{}
		for _, id := range items {
			out = append(out, enc[id])
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestListV2PagesAcrossNodes: 250 sandboxes on three nodes come out of the
// front's pages exactly once each, in start order (either way), whatever
// the page size; X-Total-Running is the sum; a bad token or limit is 400.
func TestListV2PagesAcrossNodes(t *testing.T) {
	t0 := time.Now()
	started := map[string]time.Time{}
	per := make([][]string, 3)
	var all []string // newest first
	for i := 249; i >= 0; i-- {
		id := fmt.Sprintf("%020d", i)
		started[id] = t0.Add(time.Duration(i) * time.Millisecond)
		per[i%3] = append(per[i%3], id)
		all = append(all, id)
	}
	d := &fakeDir{}
	for i, ids := range per {
		d.nodes = append(d.nodes, node(fmt.Sprintf("n%d", i), listNode(t, ids, started).URL, 0))
	}
	f := httptest.NewServer(newFront(d))
	t.Cleanup(f.Close)
	for _, c := range []struct {
		limit int
		order string
	}{{100, ""}, {7, ""}, {100, "asc"}, {33, "asc"}} {
		want := slices.Clone(all)
		if c.order == "asc" {
			slices.Reverse(want)
		}
		var got []string
		tok, pages := "", 0
		for {
			u := fmt.Sprintf("%s/v2/sandboxes?limit=%d&order=%s&nextToken=%s", f.URL, c.limit, c.order, tok)
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			var page []struct{ SandboxID string }
			_ = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if resp.StatusCode != 200 || len(page) > c.limit || resp.Header.Get("X-Total-Running") != "250" {
				t.Fatalf("%+v: page %d: status %d, %d items, total %q", c, pages, resp.StatusCode, len(page), resp.Header.Get("X-Total-Running"))
			}
			for _, s := range page {
				got = append(got, s.SandboxID)
			}
			pages++
			if tok = resp.Header.Get("X-Next-Token"); tok == "" || pages > 100 {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: %d items in %d pages, want the 250 in order", c, len(got), pages)
		}
	}
	for _, q := range []string{"limit=0", "limit=101", "nextToken=!!"} {
		resp, err := http.Get(f.URL + "/v2/sandboxes?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, resp.StatusCode)
		}
	}
}

// BenchmarkList1000 lists 1,000 sandboxes on three (fake, loopback HTTP)
// nodes through the front: all ten pages of GET /v2/sandboxes, as the
// SDK's paginator does. It measures the
// front's fan-out and merge; the real nodes' side is measured end to end
// by test/e2e/bench-cluster-list.test.mjs.
func BenchmarkList1000(b *testing.B) {
	t0 := time.Now()
	started := map[string]time.Time{}
	per := make([][]string, 3)
	for i := 999; i >= 0; i-- {
		id := fmt.Sprintf("%020d", i)
		started[id] = t0.Add(time.Duration(i) * time.Millisecond)
		per[i%3] = append(per[i%3], id)
	}
	d := &fakeDir{}
	for i, ids := range per {
		d.nodes = append(d.nodes, node(fmt.Sprintf("n%d", i), listNode(b, ids, started).URL, 0))
	}
	f := httptest.NewServer(newFront(d))
	defer f.Close()
	b.Run("v2-10-pages", func(b *testing.B) {
		for b.Loop() {
			n, tok := 0, ""
			for {
				resp, err := http.Get(f.URL + "/v2/sandboxes?limit=100&nextToken=" + tok)
				if err != nil {
					b.Fatal(err)
				}
				var page []json.RawMessage
				_ = json.NewDecoder(resp.Body).Decode(&page)
				resp.Body.Close()
				n += len(page)
				if tok = resp.Header.Get("X-Next-Token"); tok == "" {
					break
				}
			}
			if n != 1000 {
				b.Fatalf("listed %d", n)
			}
		}
	})
}
