package builder

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template/dist"
	"github.com/sbx-dev/sbx/internal/template/layers"
)

// fakeRemote fills the layers it is asked for, or fails with err.
type fakeRemote struct {
	ls    *layers.Store
	err   error
	pulls []dist.Meta
}

func (f *fakeRemote) Push(context.Context, dist.Meta) (string, error) { return "", nil }

func (f *fakeRemote) Pull(ctx context.Context, m dist.Meta) (int, error) {
	f.pulls = append(f.pulls, m)
	if f.err != nil {
		return 0, f.err
	}
	for _, id := range m.Layers {
		if _, err := f.ls.Ensure(ctx, id, func(string) error { return nil }); err != nil {
			return 0, err
		}
	}
	return len(m.Layers), nil
}

// TestRegistryFetch: a build's lower pulls its missing layers once (then
// they are local); without a registry, or when the pull fails, the create
// is unavailable (503) with the registry's error.
func TestRegistryFetch(t *testing.T) {
	ids := []string{strings.Repeat("a", 24), strings.Repeat("b", 24)}
	cases := []struct {
		name      string
		remote    bool
		builtin   bool // no build: never pulled
		err       error
		wantPulls int
		wantErr   string
	}{
		{name: "pulled on first use", remote: true, wantPulls: 1},
		{name: "no registry", wantErr: "no template registry"},
		{name: "built-in", remote: true, builtin: true, wantErr: "sbx template build tpl"},
		{name: "pull fails", remote: true, err: errors.New("pull template t build b from reg:5000/x: boom"), wantPulls: 2, wantErr: "reg:5000/x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ls := &layers.Store{Dir: filepath.Join(t.TempDir(), "layers")}
			r := &Registry{Layers: ls}
			f := &fakeRemote{ls: ls, err: c.err}
			if c.remote {
				r.Remote = f
			}
			build := "build1"
			if c.builtin {
				build = ""
			}
			tm := r.stackTemplate("tpl", build, ids, store.BuildConfig{})
			for range 2 {
				lower, err := tm.Lower(context.Background(), false)
				if c.wantErr != "" {
					if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), c.wantErr) {
						t.Fatalf("err %v, want unavailable with %q", err, c.wantErr)
					}
					continue
				}
				if err != nil || lower != ls.Path(ids[1])+":"+ls.Path(ids[0]) {
					t.Fatalf("lower %q, %v", lower, err)
				}
			}
			if len(f.pulls) != c.wantPulls { // two creates: one pull, or one per failed create
				t.Errorf("%d pulls, want %d", len(f.pulls), c.wantPulls)
			}
			if c.wantPulls > 0 && (f.pulls[0].TemplateID != "tpl" || f.pulls[0].BuildID != "build1") {
				t.Errorf("pulled %+v", f.pulls[0])
			}
		})
	}
}
