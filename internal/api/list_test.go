package api

import (
	"encoding/base64"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

func TestParseMetadataFilter(t *testing.T) {
	tests := []struct {
		raw  string // as on the wire, after "metadata="
		want map[string]string
		err  bool
	}{
		{raw: "a%3Db%252520c", want: map[string]string{"a": "b c"}}, // contract §2 probe
		{raw: "a%3D1%26b%3D2", want: map[string]string{"a": "1", "b": "2"}},
		{raw: "k%3Dv%25252B1", want: map[string]string{"k": "v+1"}},
		{raw: "", want: nil},
		{raw: "a%3D%25zz", err: true},
	}
	for _, tt := range tests {
		q, err := url.ParseQuery("metadata=" + tt.raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseMetadataFilter(q.Get("metadata"))
		if (err != nil) != tt.err || (!tt.err && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("ParseMetadataFilter(%q) = %v, %v; want %v", tt.raw, got, err, tt.want)
		}
	}
}

func TestListPaging(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []sandbox.Info
	for i := 0; i < 5; i++ { // newest first, as Manager.List returns
		id := sandbox.NewID()
		all = append(all, sandbox.Info{Sandbox: store.Sandbox{ID: id, State: "running", TemplateID: "base",
			StartedAt: base.Add(time.Duration(5-i) * time.Minute), Metadata: map[string]string{"i": string(rune('0' + i))}}})
	}
	lq, err := parseListQuery(url.Values{"limit": {"2"}})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for pages := 0; pages < 10; pages++ {
		page, next := lq.page(all)
		for _, in := range page {
			seen = append(seen, in.ID)
		}
		if next == "" {
			break
		}
		if lq, err = parseListQuery(url.Values{"limit": {"2"}, "nextToken": {next}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 5 || seen[0] != all[0].ID || seen[4] != all[4].ID {
		t.Fatalf("paged ids = %v", seen)
	}
	lq, _ = parseListQuery(url.Values{"metadata": {"i=3"}})
	if page, _ := lq.page(all); len(page) != 1 || page[0].ID != all[3].ID {
		t.Fatalf("metadata filter page = %v", page)
	}
	for _, bad := range []url.Values{{"limit": {"0"}}, {"limit": {"101"}}, {"state": {"dead"}}, {"order": {"up"}}, {"nextToken": {"!!"}}} {
		if _, err := parseListQuery(bad); err == nil {
			t.Errorf("parseListQuery(%v) accepted", bad)
		}
	}
}

func FuzzParseMetadataFilter(f *testing.F) {
	for _, s := range []string{"a=b%2520c", "a=1&b=2", "", "%zz", "=&=&", "a=%25"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMetadataFilter(s)
		if err == nil && s != "" && m == nil {
			t.Fatalf("ParseMetadataFilter(%q) = nil, nil", s)
		}
	})
}

func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{"limit=2&nextToken=YWFh", "state=running,paused&order=asc", "startedAfter=2026-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := parseListQuery(q)
		if err == nil && (lq.limit < 1 || lq.limit > 100) {
			t.Fatalf("limit %d accepted", lq.limit)
		}
	})
}

// TestListPagingAfterAnEndedCursor: the sandbox a nextToken names may end
// before the next page is asked (a client that kills what it lists, page by
// page); the next page then goes on after its place, in either order, not
// from the first sandbox again. Before, a cursor not found restarted the
// list: the next page repeated sandboxes already listed.
func TestListPagingAfterAnEndedCursor(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []sandbox.Info
	for i := 0; i < 6; i++ { // newest first, as Manager.List returns; two share a start
		at := base.Add(time.Duration(6-i) * time.Minute)
		if i == 3 {
			at = all[2].StartedAt
		}
		all = append(all, sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", StartedAt: at}})
	}
	sortLikeList(all)
	for _, order := range []string{"desc", "asc"} {
		items := append([]sandbox.Info(nil), all...)
		if order == "asc" {
			for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
				items[i], items[j] = items[j], items[i]
			}
		}
		for cut := 1; cut < 5; cut++ { // the cursor is items[cut-1], which then ends
			lq, _ := parseListQuery(url.Values{"limit": {itoa(cut)}, "order": {order}})
			_, next := lq.page(all)
			rest := withoutID(all, items[cut-1].ID)
			lq, err := parseListQuery(url.Values{"limit": {"100"}, "order": {order}, "nextToken": {next}})
			if err != nil {
				t.Fatal(err)
			}
			page, _ := lq.page(rest)
			if got, want := ids(page), ids(items[cut:]); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, cursor %d ended: next page %v, want %v", order, cut, got, want)
			}
		}
	}
	// The cluster front's per-node cursors carry the id alone.
	if _, err := parseListQuery(url.Values{"nextToken": {base64URL(all[0].ID)}}); err != nil {
		t.Errorf("an id-only nextToken: %v", err)
	}
	for _, bad := range []string{base64URL(all[0].ID + ":soon"), base64URL("no!:1")} {
		if _, err := parseListQuery(url.Values{"nextToken": {bad}}); err == nil {
			t.Errorf("nextToken %q accepted", bad)
		}
	}
}

func sortLikeList(all []sandbox.Info) {
	slices.SortFunc(all, func(a, b sandbox.Info) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

func withoutID(all []sandbox.Info, id string) []sandbox.Info {
	return slices.DeleteFunc(slices.Clone(all), func(in sandbox.Info) bool { return in.ID == id })
}

func ids(items []sandbox.Info) []string {
	out := []string{}
	for _, in := range items {
		out = append(out, in.ID)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func base64URL(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestListFiltersAsE2B: the v1 list (GET /sandboxes) is of running
// sandboxes only, as E2B's, which lists paused ones under /v2 alone;
// startedAfter takes a sandbox started at that instant ("at or after");
// template takes the template's id or its alias; X-Total-Running counts
// the running sandboxes the filters take.
func TestListFiltersAsE2B(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(state store.State, tid, alias string, started time.Time) sandbox.Info {
		return sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: state, TemplateID: tid, Alias: alias,
			StartedAt: started, Metadata: map[string]string{"k": "v"}}}
	}
	run := mk(store.StateRunning, "0a1b2c3d4e5f60718293", "my-app", at)
	paused := mk(store.StatePaused, "0a1b2c3d4e5f60718293", "my-app", at.Add(-time.Minute))
	other := mk(store.StateRunning, "base", "base", at.Add(-2*time.Minute))
	all := []sandbox.Info{run, paused, other}
	ids := func(lq listQuery) []string {
		page, _ := lq.page(all)
		var out []string
		for _, in := range page {
			out = append(out, in.ID)
		}
		return out
	}
	v1, err := parseListV1(url.Values{"metadata": {"k=v"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(v1); !slices.Equal(got, []string{run.ID, other.ID}) {
		t.Errorf("v1 list = %v, want the running %v %v", got, run.ID, other.ID)
	}
	for _, tc := range []struct {
		q       url.Values
		want    []string
		running int
	}{
		{url.Values{"startedAfter": {at.Format(time.RFC3339Nano)}}, []string{run.ID}, 1},
		{url.Values{"template": {"my-app"}}, []string{run.ID, paused.ID}, 1},
		{url.Values{"template": {run.TemplateID}}, []string{run.ID, paused.ID}, 1},
		{url.Values{"template": {"base"}, "state": {"paused"}}, nil, 1},
		{url.Values{"metadata": {"k=other"}}, nil, 0},
	} {
		lq, err := parseListQuery(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(lq); !slices.Equal(got, tc.want) || lq.totalRunning(all) != tc.running {
			t.Errorf("%v: ids %v, total running %d; want %v, %d", tc.q, got, lq.totalRunning(all), tc.want, tc.running)
		}
	}
}
