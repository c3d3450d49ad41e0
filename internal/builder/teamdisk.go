package builder

import (
	"context"
	"fmt"

	"github.com/sbx-dev/sbx/internal/store"
)

// DiskCheck is asked whether the build of templateID may go on while it
// holds the layers building (bottom first; nil before its base). It is
// called when a build starts and again after its base and each step have
// committed their layers; an error fails the build with that reason.
type DiskCheck func(ctx context.Context, templateID string, building []string) error

// SetDiskCheck installs fn (nil: none). Call it before serving.
func (s *Service) SetDiskCheck(fn DiskCheck) { s.diskCheck = fn }

// checkDisk runs the DiskCheck of the build of templateID.
func (s *Service) checkDisk(ctx context.Context, templateID, step string, building []string) error {
	if s.diskCheck == nil {
		return nil
	}
	if err := s.diskCheck(ctx, templateID, building); err != nil {
		return &stepError{step, err}
	}
	return nil
}

// LayerBytes is what the templates for which owned(templateID) is true
// charge on disk: the sizes of the distinct layers their ready builds
// reference, plus building (a build in progress), once each. Layers that a
// built-in template or a ready build of a public template references are
// free: they are everyone's base, and their presence tells nothing about
// another team. Failed builds charge nothing (their layers go by GC).
func (s *Service) LayerBytes(ctx context.Context, owned func(templateID string) (bool, error), building []string) (int64, error) {
	ts, err := s.st.Templates(ctx)
	if err != nil {
		return 0, fmt.Errorf("template disk: %w", err)
	}
	bs, err := s.st.Builds(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("template disk: %w", err)
	}
	public, mine := map[string]bool{}, map[string]bool{}
	for _, t := range ts {
		own, err := owned(t.ID)
		if err != nil {
			return 0, fmt.Errorf("template disk: %w", err)
		}
		public[t.ID], mine[t.ID] = t.Public, own
	}
	var charged, free [][]string
	recorded := map[string]int64{}
	for _, b := range bs {
		recordSizes(recorded, b)
		switch {
		case b.Status != "ready":
		case public[b.TemplateID]:
			free = append(free, b.Layers)
		case mine[b.TemplateID]:
			charged = append(charged, b.Layers)
		}
	}
	if s.reg.Builtins != nil {
		bts, err := s.reg.Builtins.List()
		if err != nil {
			return 0, fmt.Errorf("template disk: %w", err)
		}
		for _, bt := range bts {
			free = append(free, bt.Layers)
		}
	}
	return chargedBytes(append(charged, building), free, func(id string) int64 {
		return max(s.reg.Layers.DiskSize(id), recorded[id])
	}), nil
}

// layerSizes are the sizes of layers in this node's layer store, for a
// ready build's record (BuildRec.LayerSizes).
func (s *Service) layerSizes(layers []string) []int64 {
	out := make([]int64, len(layers))
	for i, l := range layers {
		out[i] = s.reg.Layers.Size(l)
	}
	return out
}

// recordSizes adds the layer sizes build b's record holds to sizes. On a
// cluster a template's layers are on the disk of the node that built it
// (and of those that pulled it): a node whose layer store lacks them
// counts them by these sizes. Before, it counted them as nothing, so a
// team's templates built on other nodes were free here and a team held
// its quota's worth of template layers on each node.
func recordSizes(sizes map[string]int64, b *store.BuildRec) {
	if len(b.LayerSizes) != len(b.Layers) {
		return // a record from before sizes were recorded
	}
	for i, l := range b.Layers {
		sizes[l] = max(sizes[l], b.LayerSizes[i])
	}
}

// chargedBytes sums size over the distinct layers of charged that are in
// no list of free.
func chargedBytes(charged, free [][]string, size func(id string) int64) int64 {
	skip := map[string]bool{}
	for _, ls := range free {
		for _, l := range ls {
			skip[l] = true
		}
	}
	var n int64
	for _, ls := range charged {
		for _, l := range ls {
			if !skip[l] {
				skip[l] = true // once
				n += size(l)
			}
		}
	}
	return n
}
