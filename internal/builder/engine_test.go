package builder

import (
	"context"
	"errors"
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
	got, err := s.fromTemplate("parent", &buildLog{})
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
