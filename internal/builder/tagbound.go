package builder

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// MaxTagsPerTemplate bounds a template's tags, "latest" included: each is a
// row in the database every team shares and an entry of the registry that
// every template request resolves against and that each change reloads in
// full (84,000 tags a team added in six requests took the daemon from 36 to
// 184 MB and every team's GET /templates to 0.24 s). A var for tests.
var MaxTagsPerTemplate = 1000

// tagRoom refuses tags that would take template id past MaxTagsPerTemplate
// (sandbox.ErrBusy: 429); tags it holds already do not count again. The
// caller holds s.names, so that the count still holds when it adds them.
func (s *Service) tagRoom(ctx context.Context, id string, tags []string) error {
	fresh, err := s.freshTags(ctx, id, tags)
	if err != nil {
		return err
	}
	if fresh.have+len(fresh.add) > MaxTagsPerTemplate {
		return fmt.Errorf("%w: a template holds at most %d tags and this one has %d; remove some first",
			sandbox.ErrBusy, MaxTagsPerTemplate, fresh.have)
	}
	return nil
}

// tagSet is a template's tag count and the tags asked for it does not hold.
type tagSet struct {
	have int
	add  []string
}

// freshTags counts template id's tags and lists those of tags it lacks
// (each once).
func (s *Service) freshTags(ctx context.Context, id string, tags []string) (tagSet, error) {
	recs, err := s.st.Tags(ctx, id)
	if err != nil {
		return tagSet{}, err
	}
	seen := make(map[string]bool, len(recs)+len(tags))
	for _, r := range recs {
		seen[r.Tag] = true
	}
	out := tagSet{have: len(recs)}
	for _, t := range tags {
		if !seen[t] {
			seen[t] = true
			out.add = append(out.add, t)
		}
	}
	return out, nil
}

// putReadyTags points "latest" and the tags build b was requested with at
// it, once it is ready, and returns those it left out: the ones past
// MaxTagsPerTemplate (builds of one template finishing together may have
// been admitted against the same count). "latest" is always set. It holds
// s.names.
func (s *Service) putReadyTags(ctx context.Context, b *store.BuildRec, now time.Time) (dropped []string) {
	s.names.Lock()
	defer s.names.Unlock()
	fresh, err := s.freshTags(ctx, b.TemplateID, b.Tags)
	room := max(0, MaxTagsPerTemplate-fresh.have-1)
	keep := append([]string{"latest"}, b.Tags...)
	if err == nil && len(fresh.add) > room {
		dropped = fresh.add[room:]
		keep = append([]string{"latest"}, without(b.Tags, dropped)...)
	}
	for _, tag := range keep {
		if perr := s.st.PutTag(ctx, store.TagRec{TemplateID: b.TemplateID, Tag: tag, BuildID: b.ID, CreatedAt: now}); perr != nil {
			s.log.Error("record build tag", "build", b.ID, "tag", tag, "err", perr)
		}
	}
	return dropped
}

// without is tags less those in drop.
func without(tags, drop []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if !slices.Contains(drop, t) {
			out = append(out, t)
		}
	}
	return out
}
