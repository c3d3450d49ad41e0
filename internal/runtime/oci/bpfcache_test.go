package oci

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/runtime/runtimetest"
)

// TestCrunFilterCache: the first crun start compiles the seccomp profile;
// the next gets that filter in its bundle's annotation, and crun loads the
// same bytes (its state copy equals the first). Isolation with the cached
// filter is checked by the conformance suite (Isolation/second).
func TestCrunFilterCache(t *testing.T) {
	r, err := New("crun", Config{StateDir: t.TempDir()})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skip(err)
	}
	fx := runtimetest.NewFixture(t)
	var filters [2][]byte
	for i := range filters {
		s, _ := fx.Spec(t, r, "exec sleep 1000", runtime.Limits{})
		sb, err := r.Create(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Delete(context.Background()) })
		var sp specs.Spec
		b, _ := os.ReadFile(filepath.Join(r.bundle(s.ID), "config.json"))
		if err := json.Unmarshal(b, &sp); err != nil {
			t.Fatal(err)
		}
		ann, has := sp.Annotations[bpfAnnotation]
		if has != (i == 1) {
			t.Fatalf("start %d: annotation present %v", i, has)
		}
		if filters[i], err = os.ReadFile(filepath.Join(r.root, s.ID, "seccomp.bpf")); err != nil || len(filters[i]) == 0 {
			t.Fatalf("start %d: filter in crun's state: %v (%d bytes)", i, err, len(filters[i]))
		}
		if has {
			if dec, _ := base64.StdEncoding.DecodeString(ann); !bytes.Equal(dec, filters[0]) {
				t.Fatal("annotation is not the filter crun compiled")
			}
		}
	}
	if !bytes.Equal(filters[0], filters[1]) {
		t.Fatal("crun loaded another filter than the one it compiled")
	}
}

// TestFilterKey: the key changes with the profile and with the binary, and
// only crun gets one.
func TestFilterKey(t *testing.T) {
	sp := func(kind string) *specs.Spec { return &specs.Spec{Linux: &specs.Linux{Seccomp: Seccomp(kind)}} }
	crun := &Runtime{kind: "crun", cfg: Config{Binary: "/nonexistent/a"}}
	k := crun.filterKey(sp("crun"))
	if k == "" || k != crun.filterKey(sp("crun")) {
		t.Fatalf("key %q not stable", k)
	}
	if k == crun.filterKey(sp("runsc")) {
		t.Error("another profile, same key")
	}
	if k == (&Runtime{kind: "crun", cfg: Config{Binary: "/nonexistent/b"}}).filterKey(sp("crun")) {
		t.Error("another binary, same key")
	}
	if (&Runtime{kind: "runc"}).filterKey(sp("runc")) != "" || crun.filterKey(&specs.Spec{Linux: &specs.Linux{}}) != "" {
		t.Error("a key for runc or for no profile")
	}
}
