package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPutGetListDelete(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := &Sandbox{ID: "a", State: "running", TemplateID: "base", StartedAt: now, EndAt: now.Add(time.Minute), Metadata: map[string]string{"k": "v"}}
	b := &Sandbox{ID: "b", State: "creating", TemplateID: "base", StartedAt: now.Add(time.Second)}
	for _, r := range []*Sandbox{a, b} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	a.State = "paused"
	if err := s.Put(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "a")
	if err != nil || got.State != "paused" || got.Metadata["k"] != "v" || !got.EndAt.Equal(a.EndAt) {
		t.Fatalf("Get a = %+v, %v", got, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "a" {
		t.Fatalf("List = %v, %v", list, err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get deleted = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("double delete: %v", err)
	}
}

func TestReopenKeepsRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, &Sandbox{ID: "x", State: "running"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(ctx, "x"); err != nil {
		t.Fatalf("record lost across reopen: %v", err)
	}
}

func TestSnapshots(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	a := &Snapshot{ID: "snapa", Name: "first", SandboxID: "x", CreatedAt: now, Bytes: 10}
	b := &Snapshot{ID: "snapb", SandboxID: "x", CreatedAt: now.Add(time.Second), EnvVars: map[string]string{"K": "v"}}
	for _, r := range []*Snapshot{a, b} {
		if err := s.PutSnapshot(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.GetSnapshot(ctx, "first"); err != nil || got.ID != "snapa" {
		t.Fatalf("by name: %+v %v", got, err)
	}
	if got, err := s.GetSnapshot(ctx, "snapb"); err != nil || got.EnvVars["K"] != "v" {
		t.Fatalf("by id: %+v %v", got, err)
	}
	if _, err := s.GetSnapshot(ctx, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty name must not match unnamed snapshots: %v", err)
	}
	list, err := s.ListSnapshots(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "snapb" {
		t.Fatalf("list (newest first): %v %v", list, err)
	}
	if err := s.DeleteSnapshot(ctx, "snapa"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSnapshot(ctx, "first"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
}
