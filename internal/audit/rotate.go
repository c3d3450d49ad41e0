package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sbx-dev/sbx/internal/failpoint"
)

// rotateRetry is how long a failed rotation waits before the next try (the
// log goes on growing in the active file meanwhile).
const rotateRetry = 10 * time.Second

// rotation is the Log's rotation settings and state (guarded by Log.mu).
type rotation struct {
	maxSize int64 // rotate once the active file holds this many bytes (0: never)
	keep    int   // rotated segments kept (0: all)
	failed  time.Time
	kick    chan struct{} // wakes the pruner (nil: none running)
	done    chan struct{} // closed when the pruner ends
}

// SetRotation makes the log rotate: once the active file reaches maxSize
// bytes it becomes the segment audit.log.<its first seq> and a new active
// file starts; beyond keep segments the oldest are deleted by a pruner
// goroutine (at once for those already there). Call it after SetAnchor, so
// that deletions are signed; Close stops the pruner. maxSize 0 never
// rotates, keep 0 never deletes.
func (l *Log) SetRotation(maxSize int64, keep int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rot.maxSize, l.rot.keep = maxSize, keep
	if keep > 0 && l.rot.kick == nil && !l.closed {
		l.rot.kick, l.rot.done = make(chan struct{}, 1), make(chan struct{})
		go l.runPruner(l.rot.kick, l.rot.done)
		l.rot.kick <- struct{}{}
	}
}

// maybeRotateLocked rotates when the active file is full (after a failure,
// not before rotateRetry). The caller holds l.mu: appends wait for one
// fsync of at most syncEvery of records, a link, a create and a rename.
func (l *Log) maybeRotateLocked() {
	if l.rot.maxSize <= 0 || l.size < l.rot.maxSize || time.Since(l.rot.failed) < rotateRetry {
		return
	}
	if err := l.swapLocked(); err != nil {
		l.rot.failed = time.Now()
		l.reportLocked(fmt.Errorf("rotate audit log: %w", err))
		return
	}
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		l.reportLocked(fmt.Errorf("rotate audit log: %w", err))
	}
	if l.rot.kick != nil {
		select {
		case l.rot.kick <- struct{}{}:
		default: // a prune is already due
		}
	}
}

// swapLocked makes the active file a segment and starts a new one. Each
// step leaves a state Open resumes from: the segment is first a second
// name (hard link) of the active file (recoverRotation unlinks it again),
// then an empty file replaces the active one in a rename. On an error the
// log keeps its active file and nothing is lost.
func (l *Log) swapLocked() error {
	if err := l.f.Sync(); err != nil {
		return err
	}
	seg := segmentPath(l.path, l.segFirst)
	if err := os.Link(l.path, seg); err != nil {
		return err
	}
	tmp := l.path + ".new"
	nf, err := os.OpenFile(tmp, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		err = failpoint.Hit("audit/rotate-linked")
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		if nf != nil {
			nf.Close()
		}
		return errors.Join(err, removeIfThere(tmp), os.Remove(seg))
	}
	old := l.f
	l.f, l.size, l.segFirst = nf, 0, l.seq+1
	_ = old.Close()
	_ = failpoint.Hit("audit/rotate-swapped") // a crash here: the directory not yet synced
	return nil
}

// reportLocked passes a background failure to the Error hook.
func (l *Log) reportLocked(err error) {
	if l.hooks.Error != nil {
		l.hooks.Error(err)
	}
}

func removeIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// syncDir makes the directory's entries (a rename, a link) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// recoverRotation finishes what a crash in the middle of a rotation left: a
// stray audit.log.new (it gets records only once renamed over audit.log)
// is removed; a newest segment that is still a second name of the active
// file (linked, not swapped) is unlinked, undoing the rotation: the next
// append redoes it.
func recoverRotation(path string) error {
	if err := removeIfThere(path + ".new"); err != nil {
		return fmt.Errorf("audit log: remove a rotation's leftover: %w", err)
	}
	segs, err := segmentsOf(path)
	if err != nil || len(segs) == 0 {
		return err
	}
	newest := segs[len(segs)-1].path
	if !sameFile(path, newest) {
		return nil
	}
	if err := os.Remove(newest); err != nil {
		return fmt.Errorf("audit log: undo a rotation cut short: %w", err)
	}
	return syncDir(filepath.Dir(path))
}
