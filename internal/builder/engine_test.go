package builder

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// A template built from another inherits its layers, env, user and
// workdir, but never its start snapshot (another stack).
func TestFromTemplateInherits(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now()
	tr := &store.TemplateRec{ID: "t1", Names: []string{"parent"}, CreatedAt: now}
	b := &store.BuildRec{ID: "b1", TemplateID: "t1", Status: "ready", Layers: []string{"aaaaaaaaaaaaaaaaaaaaaaaa"}, CreatedAt: now,
		Config: store.BuildConfig{Env: map[string]string{"A": "1"}, User: "app", Workdir: "/app", StartCmd: "serve", Snapshot: "snap1"}}
	if err := errors.Join(st.PutTemplate(ctx, tr), st.PutBuild(ctx, b), st.PutTag(ctx, store.TagRec{TemplateID: "t1", Tag: "latest", BuildID: "b1", CreatedAt: now})); err != nil {
		t.Fatal(err)
	}
	s := &Service{reg: &Registry{Store: st}}
	if err := s.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.fromTemplate("parent", "", &buildLog{})
	if err != nil {
		t.Fatal(err)
	}
	if got.cfg.Snapshot != "" || got.cfg.Env["A"] != "1" || got.run.user != "app" || got.run.workdir != "/app" || len(got.layers) != 1 {
		t.Fatalf("state %+v", got)
	}
	got.cfg.Env["A"] = "2"
	if b.Config.Env["A"] != "1" {
		t.Fatal("the child's env aliases the parent's")
	}
}

// TestStepsStartAsE2B: a build's steps start as E2B's do, `user` in
// /home/user, from a parent template that set no USER or WORKDIR (and from
// an image, whatever its own USER and WORKDIR: fromImage calls the same
// startRun), not as the image's user (root) in / as in Docker. Before, a
// runCmd with no user ran as root in /, where E2B runs it as user.
func TestStepsStartAsE2B(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now()
	tr := &store.TemplateRec{ID: "t2", Names: []string{"plain"}, CreatedAt: now}
	b := &store.BuildRec{ID: "b2", TemplateID: "t2", Status: "ready", Layers: []string{"aaaaaaaaaaaaaaaaaaaaaaaa"}, CreatedAt: now}
	if err := errors.Join(st.PutTemplate(ctx, tr), st.PutBuild(ctx, b), st.PutTag(ctx, store.TagRec{TemplateID: "t2", Tag: "latest", BuildID: "b2", CreatedAt: now})); err != nil {
		t.Fatal(err)
	}
	s := &Service{reg: &Registry{Store: st}}
	if err := s.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.fromTemplate("plain", "", &buildLog{})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.runCfg(); c.User != "user" || c.Workdir != "/home/user" {
		t.Fatalf("steps start as %q in %q, want user in /home/user", c.User, c.Workdir)
	}
	if got.cfg.User != "" || got.cfg.Workdir != "" {
		t.Fatalf("the sandbox defaults %q %q changed: they come from USER and WORKDIR steps only", got.cfg.User, got.cfg.Workdir)
	}
}

// TestInheritStart: a build on a template that sets neither a start nor a
// ready command keeps the parent's, as E2B's finalize phase does; one that
// sets either (or builds on an image) has its own only. Before, every child
// lost its parent's start command. The inherited one runs with the parent's
// env, as E2B's (its start metadata's context holds the parent's env vars):
// before, with the child's.
func TestInheritStart(t *testing.T) {
	parent := store.BuildConfig{StartCmd: "serve", ReadyCmd: "ready?", User: "app", Workdir: "/app", Env: map[string]string{"PORT": "8000"}}
	for _, c := range []struct {
		name        string
		spec        Spec
		start, read string
		as          *store.StartContext
	}{
		{"child sets nothing", Spec{FromTemplate: "t1"}, "serve", "ready?", &store.StartContext{User: "app", Workdir: "/app", Env: map[string]string{"PORT": "8000"}}},
		{"child sets its start", Spec{FromTemplate: "t1", StartCmd: "mine"}, "mine", "", nil},
		{"child sets a ready command alone", Spec{FromTemplate: "t1", ReadyCmd: "check"}, "", "check", nil},
		{"an image has no parent", Spec{FromImage: "x"}, "", "", nil},
	} {
		st := &state{cfg: cloneCfg(parent), parentStart: startContextOf(parent)}
		st.cfg.User, st.cfg.Workdir = "root", "/tmp" // the child's own USER, WORKDIR and ENV steps
		st.cfg.Env["PORT"] = "9000"
		inheritStart(st, c.spec, &buildLog{})
		if st.cfg.StartCmd != c.start || st.cfg.ReadyCmd != c.read {
			t.Errorf("%s: start %q ready %q, want %q %q", c.name, st.cfg.StartCmd, st.cfg.ReadyCmd, c.start, c.read)
		}
		if !reflect.DeepEqual(st.cfg.StartAs, c.as) {
			t.Errorf("%s: start as %+v, want %+v", c.name, st.cfg.StartAs, c.as)
		}
	}
	// a parent with no USER or WORKDIR: E2B's defaults, spelled out
	if got := startContextOf(store.BuildConfig{StartCmd: "serve"}); !reflect.DeepEqual(*got, store.StartContext{User: "user", Workdir: "~", Env: map[string]string{}}) {
		t.Errorf("defaults: %+v", got)
	}
	// a grandchild inherits what the child inherited: the grandparent's context
	child := store.BuildConfig{StartCmd: "serve", User: "root", Env: map[string]string{"PORT": "9000"},
		StartAs: &store.StartContext{User: "app", Workdir: "/app", Env: map[string]string{"PORT": "8000"}}}
	if got := startContextOf(child); !reflect.DeepEqual(got, child.StartAs) || got == child.StartAs {
		t.Errorf("grandchild: %+v", got)
	}
	// a child recorded before StartAs kept the env ran its inherited start
	// command with its own env: its own child keeps that
	child.StartAs.Env = nil
	if got := startContextOf(child); got.Env["PORT"] != "9000" {
		t.Errorf("grandchild of an older build: %+v", got)
	}
}
