package builder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// DefaultGCGrace keeps unreferenced layers this long: the cache of a failed
// or cancelled build, for the retry that usually follows.
const DefaultGCGrace = time.Hour

// GC removes orphan builds (of deleted templates) that no sandbox or
// snapshot runs on, then every layer no build references, older than
// GCGrace, uploads of deleted templates and the logs of builds whose
// records are gone. It returns the bytes freed.
func (s *Service) GC(ctx context.Context) (int64, error) {
	s.names.Lock() // no template appears or disappears meanwhile
	defer s.names.Unlock()
	s.mu.Lock()
	busy := len(s.cancels) > 0
	s.mu.Unlock()
	if busy { // a build's layers are referenced by nothing until it ends
		return 0, nil
	}
	inUse := map[string]bool{}
	for _, in := range s.mgr.List() {
		inUse[in.Build] = true
	}
	snaps, err := s.st.ListSnapshots(ctx)
	if err != nil {
		return 0, err
	}
	for _, sn := range snaps {
		if !sn.ForBuild { // a build's own snapshot goes with it
			inUse[sn.Build] = true
		}
	}
	bs, err := s.st.Builds(ctx, "")
	if err != nil {
		return 0, err
	}
	own, err := s.ownBuilds(ctx) // on a cluster, only this node knows what uses its builds
	if err != nil {
		return 0, err
	}
	keep, builds := map[string]bool{}, map[string]bool{}
	for _, b := range bs {
		if own[b.ID] && b.Orphan && !inUse[b.ID] && b.Status != "building" && b.Status != "waiting" {
			if sn := b.Config.Snapshot; sn != "" {
				if err := s.mgr.DeleteSnapshot(ctx, sn); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
					return 0, err
				}
			}
			if err := s.st.DeleteBuild(ctx, b.ID); err != nil {
				return 0, err
			}
			continue
		}
		builds[b.ID] = true
		for _, l := range b.Layers {
			keep[l] = true
		}
	}
	if err := s.reg.Reload(ctx); err != nil {
		return 0, err
	}
	freed, err := s.removeLayers(keep)
	return freed, errors.Join(err, s.removeUploads(), s.removeLogs(ctx, builds))
}

// removeLayers releases this daemon's use of every layer no build keeps
// (the layer goes once no daemon sharing the store uses it).
func (s *Service) removeLayers(keep map[string]bool) (int64, error) {
	ls := s.reg.Layers
	ids, err := ls.List()
	if err != nil {
		return 0, err
	}
	var freed int64
	var errs []error
	for _, id := range ids {
		fi, err := os.Stat(filepath.Join(ls.Dir, id))
		if keep[id] || err != nil || !ls.Owned(id) || time.Since(fi.ModTime()) < s.cfg.GCGrace {
			continue
		}
		size := ls.Size(id)
		removed, err := ls.Release(id)
		if err != nil {
			errs = append(errs, err)
		} else if removed {
			freed += size
		}
	}
	return freed, errors.Join(errs...)
}

// UploadBytes is the size of the uploaded files of the templates owned
// says are a team's: they are kept as long as their template and count
// against its disk quota (internal/api diskUsed). Uploads in flight (their
// temporary files) are not counted: the API reserves their length.
func (s *Service) UploadBytes(owned func(templateID string) (bool, error)) (int64, error) {
	dir := filepath.Join(s.cfg.DataDir, "uploads")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if ok, err := owned(e.Name()); err != nil || !ok {
			if err != nil {
				return 0, err
			}
			continue
		}
		files, _ := os.ReadDir(filepath.Join(dir, e.Name()))
		for _, f := range files {
			if strings.HasPrefix(f.Name(), ".") {
				continue // an upload in flight (".upload-*"): the API reserves its length instead
			}
			if fi, err := f.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n, nil
}

// removeUploads deletes the uploaded files of templates that are gone.
func (s *Service) removeUploads() error {
	dir := filepath.Join(s.cfg.DataDir, "uploads")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if _, ok := s.reg.lookup(e.Name()); !ok && !strings.HasPrefix(e.Name(), ".") {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// RunGC collects every interval until ctx ends.
func (s *Service) RunGC(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.flushSpawns(ctx)
			if n, err := s.GC(ctx); err != nil {
				s.log.Warn("template GC", "err", err)
			} else if n > 0 {
				s.log.Info("template GC freed layers", "bytes", n)
			}
		}
	}
}

// ownBuilds is the set of build ids this node made (every build on a
// single node).
func (s *Service) ownBuilds(ctx context.Context) (map[string]bool, error) {
	bs, err := s.st.OwnBuilds(ctx)
	if err != nil {
		return nil, err
	}
	own := make(map[string]bool, len(bs))
	for _, b := range bs {
		own[b.ID] = true
	}
	return own, nil
}
