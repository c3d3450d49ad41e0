package builder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-dev/sbx/internal/store"
)

// A build's log (<data-dir>/builds/<build>.log, up to about 6 MiB: 4 MiB
// of text in up to 20,000 JSON lines) and its record's spec and reason
// (recordBytes) are the team's disk: LogBytes counts them against the team's disk quota while its template lasts, and GC (run
// after every template delete, too) removes the logs of builds whose records
// are gone (their template deleted and collected). Before, no log was ever removed or counted: a
// team's failing builds that each printed a few MiB left that much on the
// host's disk for good, whatever its quota, its templates deleted or not.

// LogBytes is the size of the build logs and records (recordBytes) of the
// templates owned says are a team's.
func (s *Service) LogBytes(ctx context.Context, owned func(templateID string) (bool, error)) (int64, error) {
	bs, err := s.st.Builds(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("build logs: %w", err)
	}
	mine := map[string]bool{}
	var n int64
	for _, b := range bs {
		own, ok := mine[b.TemplateID]
		if !ok {
			if own, err = owned(b.TemplateID); err != nil {
				return 0, fmt.Errorf("build logs: %w", err)
			}
			mine[b.TemplateID] = own
		}
		if !own {
			continue
		}
		n += recordBytes(b) + s.logSize(b)
	}
	return n, nil
}

// logSize is the size of build b's log: the size its record holds (set
// when the build ended, seen by every node of a cluster) or, larger, the
// size of its log file here (a build running on this node, or one a
// restart ended). A build running on another node counts once it ends:
// its log is at most about 6 MiB, and builds run a few at a time per node.
// Before, a node stat'ed its own log files only, so a team's builds on
// other nodes left their logs there uncounted.
func (s *Service) logSize(b *store.BuildRec) int64 {
	if fi, err := os.Stat(s.logPath(b.ID)); err == nil && fi.Size() > b.LogBytes {
		return fi.Size()
	}
	return b.LogBytes
}

// recordBytes is what build b's record holds of its request and outcome in
// the shared database: its spec (up to the API's 1 MiB body) and reason.
// Before, it counted nowhere and builds are kept with their template: a
// team's fast-failing builds of a 900 KB spec grew the node's database by
// about 1 MB each under any disk quota.
func recordBytes(b *store.BuildRec) int64 {
	return int64(len(b.Spec) + len(b.Reason) + len(b.ReasonStep))
}

// logPath is where build id's log lives.
func (s *Service) logPath(id string) string { return filepath.Join(s.logDir(), id+".log") }

// removeLogs deletes every build log whose build is not in keep and has
// no record now: a build's record is written before its log is opened, so a
// build that began after GC listed the builds keeps its log.
func (s *Service) removeLogs(ctx context.Context, keep map[string]bool) error {
	ents, err := os.ReadDir(s.logDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok || keep[id] {
			continue
		}
		if _, err := s.st.Build(ctx, id); !errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err := os.Remove(filepath.Join(s.logDir(), e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
