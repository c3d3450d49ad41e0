package template

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/layer"
)

// Build returns the template name, building it first if it is not built yet
// (needs root). A built template is returned at once. The build happens in
// Dir/.build-<name>-<rand> and is renamed to Dir/<name> only when complete;
// on any error, a cancelled ctx included, the temporary directory is removed
// and nothing else changes. Builds are serialized by Dir/.lock, and a build
// first removes what interrupted builds left. Progress goes to log.
func (s *Store) Build(ctx context.Context, name string, log io.Writer) (*Template, error) {
	if t, err := s.Get(name); err == nil {
		return t, nil
	}
	def, ok := Definitions[name]
	if !ok {
		return nil, fmt.Errorf("%w: no definition for %q (have %s)", ErrNotFound, name, strings.Join(Names(), ", "))
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("build template %s: %w", name, err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("build template %s: %w", name, err)
	}
	defer unlock()
	if t, err := s.Get(name); err == nil {
		return t, nil // built by another process while we waited
	}
	if err := s.removeStale(); err != nil {
		return nil, fmt.Errorf("build template %s: %w", name, err)
	}
	if err := s.buildAndCommit(ctx, def, log); err != nil {
		return nil, fmt.Errorf("build template %s: %w", name, err)
	}
	return s.Get(name)
}

// buildAndCommit builds def in a temporary directory and renames it into
// place; on error the temporary directory is removed.
func (s *Store) buildAndCommit(ctx context.Context, def Definition, log io.Writer) (err error) {
	tmp, err := os.MkdirTemp(s.Dir, ".build-"+def.Name+"-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, layer.Cleanup(tmp))
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil { // traversable by the userns range
		return err
	}
	start := time.Now()
	if err := s.build(ctx, def, tmp, log); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.Dir, def.Name)); err != nil {
		return err
	}
	fmt.Fprintf(log, "template %s built in %s\n", def.Name, time.Since(start).Round(100*time.Millisecond))
	return syncDir(s.Dir)
}

// lock takes Dir/.lock exclusively, waiting until ctx ends.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.Dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// removeStale removes what interrupted builds left (unmounting anything
// mounted in them first). Call it with the lock held.
func (s *Store) removeStale() error {
	return layer.CleanupMatching(s.Dir, func(name string) bool { return strings.HasPrefix(name, ".build-") })
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
