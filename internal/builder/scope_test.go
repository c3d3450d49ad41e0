package builder

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/telemetry"
	"github.com/sbx-dev/sbx/internal/template"
)

// scopedRegistry holds "my-app" three times: the default team's (an old
// record: no owner row, as every template written before teams), team
// a's (public) and team b's (private), each with a ready build.
func scopedRegistry(t *testing.T) *Service {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx, now := context.Background(), time.Now()
	for _, tc := range []struct {
		id, team string
		public   bool
	}{{"tdefault", "", false}, {"ta", "a", true}, {"tb", "b", false}} {
		err := st.PutTemplate(ctx, &store.TemplateRec{ID: tc.id, Names: []string{"my-app"}, Public: tc.public, CreatedAt: now})
		if tc.team != "" {
			err = errors.Join(err, st.SetTemplateOwner(ctx, tc.id, tc.team))
		}
		err = errors.Join(err, st.PutBuild(ctx, &store.BuildRec{ID: "b" + tc.id, TemplateID: tc.id, Status: "ready", Layers: []string{"l"}, CreatedAt: now}),
			st.PutTag(ctx, store.TagRec{TemplateID: tc.id, Tag: "latest", BuildID: "b" + tc.id, CreatedAt: now}))
		if err != nil {
			t.Fatal(err)
		}
	}
	s := &Service{reg: &Registry{Store: st, Builtins: &template.Store{Dir: t.TempDir()}}, st: st}
	if err := s.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNamesScopedToTeam: a bare name is the caller's team's template; a
// "namespace/name" of another team is found only when public, and a
// private one reads exactly as none; ids resolve for every team (the API's
// ownership gate decides); the default team's bare names are as before.
func TestNamesScopedToTeam(t *testing.T) {
	s := scopedRegistry(t)
	def := telemetry.DefaultTeam
	for _, tc := range []struct {
		team, ref, want string // want "": not found
	}{
		{"", "my-app", "tdefault"},
		{"a", "my-app", "ta"},
		{"b", "my-app", "tb"},
		{"c", "my-app", ""}, // a team without one: not the default team's
		{"b", "a/my-app", "ta"},
		{"a", "b/my-app", ""}, // private
		{"a", "b/nothing", ""},
		{"b", "b/my-app", "tb"}, // its own namespace
		{"a", def + "/my-app", ""},
		{"", def + "/my-app", "tdefault"},
		{"", "a/my-app", "ta"},
		{"", "b/my-app", ""},
		{"b", "ta", "ta"}, // by id
		{"", "a/", ""},
		{"", "/my-app", ""},
	} {
		got := ""
		if tr, ok := s.reg.lookupIn(tc.team, tc.ref); ok {
			got = tr.ID
		}
		id, _, err := s.Alias(tc.team, tc.ref)
		if got != tc.want || id != tc.want || (tc.want == "" && err == nil) {
			t.Errorf("team %q: %q = %q, alias %q %v; want %q", tc.team, tc.ref, got, id, err, tc.want)
		}
	}
}

// TestScopedRef: what the API passes on to the team-less calls. A team's
// template becomes its id (with the tag); a built-in's name and the
// default team's refs are unchanged; another team's unknown name gets the
// team's namespace, so the team-less lookup never finds the default team's
// template of that name; GetFor creates from the team's own build.
func TestScopedRef(t *testing.T) {
	s := scopedRegistry(t)
	for _, tc := range []struct{ team, ref, want string }{
		{"a", "my-app:v1", "ta:v1"},
		{"b", "my-app", "tb"},
		{"", "my-app", "tdefault"},
		{"", "nothing", "nothing"},
		{"c", "base", "base"},
		{"c", "code-interpreter-v1:latest", "code-interpreter-v1:latest"},
		{"c", "my-app", "c/my-app"},
		{"c", "b/my-app", "c/b/my-app"},
	} {
		got := s.Scoped(tc.team, tc.ref)
		if got != tc.want {
			t.Errorf("Scoped(%q, %q) = %q, want %q", tc.team, tc.ref, got, tc.want)
		}
		if _, ok := s.reg.lookup(got); tc.team == "c" && ok {
			t.Errorf("Scoped(%q, %q) = %q: the default team's lookup finds it", tc.team, tc.ref, got)
		}
	}
	for team, want := range map[string]string{"": "btdefault", "a": "bta", "b": "btb"} {
		if tm, err := s.reg.GetFor(team, "my-app"); err != nil || tm.Build != want {
			t.Errorf("GetFor(%q, my-app) = %+v %v, want build %s", team, tm.Build, err, want)
		}
	}
	if _, err := s.reg.GetFor("c", "my-app"); err == nil {
		t.Error("a team without my-app got the default team's")
	}
}

// TestTemplateForTeam: a build request's name is looked up in the team's
// namespace; a new one is made with its owner row, so a reload sees it as
// the team's; the same name in the default team stays the default team's.
func TestTemplateForTeam(t *testing.T) {
	s := scopedRegistry(t)
	ctx := context.Background()
	for _, tc := range []struct{ team, name, want string }{
		{"a", "my-app", "ta"},
		{"", "my-app", "tdefault"},
		{"b", "ta", ""}, // another team's id is a new name, not its template
		{"c", "my-app", ""},
	} {
		tr, err := s.templateFor(ctx, tc.team, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want != "" && tr.ID != tc.want || tc.want == "" && (tr.ID == "ta" || tr.ID == "tdefault") {
			t.Errorf("templateFor(%q, %q) = %s, want %q (\"\": new)", tc.team, tc.name, tr.ID, tc.want)
		}
		if err := s.reg.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.reg.TeamOf(tr.ID); got != tc.team {
			t.Errorf("templateFor(%q, %q): owner %q", tc.team, tc.name, got)
		}
	}
	if tr, ok := s.reg.lookupIn("c", "my-app"); !ok || s.reg.TeamOf(tr.ID) != "c" {
		t.Error("team c's new my-app does not resolve for c")
	}
	if tr, _ := s.reg.lookup("my-app"); tr.ID != "tdefault" {
		t.Errorf("the default team's my-app = %s", tr.ID)
	}
}
