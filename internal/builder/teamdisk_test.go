package builder

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

func TestChargedBytes(t *testing.T) {
	size := func(id string) int64 { return map[string]int64{"a": 1, "b": 10, "c": 100, "d": 1000}[id] }
	for _, tc := range []struct {
		name          string
		charged, free [][]string
		want          int64
	}{
		{"nothing", nil, nil, 0},
		{"one build", [][]string{{"a", "b"}}, nil, 11},
		{"shared layers once", [][]string{{"a", "b"}, {"a", "b", "c"}}, nil, 111},
		{"free base", [][]string{{"a", "b", "c"}}, [][]string{{"a", "b"}}, 100},
		{"all free", [][]string{{"a"}}, [][]string{{"b"}, {"a"}}, 0},
		{"building on top", [][]string{{"a", "b"}, {"a", "b", "d"}}, [][]string{{"a"}}, 1010},
		{"unknown size", [][]string{{"x"}}, nil, 0},
	} {
		if got := chargedBytes(tc.charged, tc.free, size); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// LayerBytes charges a team the distinct layers of its ready builds (and
// of a build in progress), never those of public templates or of other
// teams' templates, nor of failed builds.
func TestLayerBytes(t *testing.T) {
	s := gcService(t)
	ctx := context.Background()
	now := time.Now().UTC()
	pub := s.testLayer(t, "11111111111111111111111111111111")                   // 32 bytes
	mine := s.testLayer(t, "2222222222222222222222222222222222222222")          // 40 bytes
	other := s.testLayer(t, "333333333333333333333333333333333333333333333333") // 48 bytes
	failed := s.testLayer(t, "444444444444444444444444444444444444444444444444444444444444")
	top := s.testLayer(t, "5555555555555555555555555555")
	put := func(id string, public bool, status string, ls ...string) error {
		return errors.Join(s.st.PutTemplate(ctx, &store.TemplateRec{ID: id, Names: []string{id}, Public: public, CreatedAt: now}),
			s.st.PutBuild(ctx, &store.BuildRec{ID: id + "-" + status, TemplateID: id, Status: status, Layers: ls, CreatedAt: now}))
	}
	if err := errors.Join(put("pub", true, "ready", pub), put("a", false, "ready", pub, mine),
		put("a2", false, "ready", pub, mine), put("a3", false, "error", failed), put("b", false, "ready", pub, other)); err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{"a": "A", "a2": "A", "a3": "A", "b": "B", "pub": ""}
	for _, tc := range []struct {
		team     string
		building []string
		want     int64
	}{
		{"A", nil, 40},
		{"A", []string{pub, mine, top}, 40 + 28},
		{"B", nil, 48},
		{"C", nil, 0},
		{"C", []string{pub, failed}, 60},
	} {
		owned := func(id string) (bool, error) { return owners[id] == tc.team, nil }
		got, err := s.LayerBytes(ctx, owned, tc.building)
		if err != nil || got != tc.want {
			t.Errorf("team %s building %v: %d, %v; want %d", tc.team, tc.building, got, err, tc.want)
		}
	}
	boom := errors.New("boom")
	if _, err := s.LayerBytes(ctx, func(string) (bool, error) { return false, boom }, nil); !errors.Is(err, boom) {
		t.Errorf("owner lookup error: %v", err)
	}
}
