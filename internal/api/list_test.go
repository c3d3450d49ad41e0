package api

import (
	"net/url"
	"reflect"
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
