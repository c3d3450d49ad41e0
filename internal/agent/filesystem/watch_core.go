package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// watchSpec is what WatchDir and CreateWatcher ask for.
type watchSpec struct {
	root               string        // absolute, resolved for the caller
	user               identity.User // the caller: the watch is added with its credentials
	recursive          bool
	includeEntry       bool
	allowNetworkMounts bool
}

// dirWatch turns inotify events under root into FilesystemEvents. With
// recursive set it adds a watch for every directory below root, including
// ones created later. It is used by one goroutine at a time.
type dirWatch struct {
	spec  watchSpec
	names *fsutil.Names
	w     *fsnotify.Watcher
}

// openWatch starts watching spec.root as spec.user (so only a directory the
// user may read can be watched, whatever symlink leads there): not_found
// when it is missing, invalid_argument when it is not a directory or is on
// a network mount that was not allowed. The caller must Close the watch.
func openWatch(spec watchSpec, users identity.Files) (d *dirWatch, err error) {
	err = identity.As(spec.user, func() error {
		d, err = openWatchAs(spec, users)
		return err
	})
	return d, err
}

func openWatchAs(spec watchSpec, users identity.Files) (*dirWatch, error) {
	fi, err := os.Stat(spec.root)
	if err != nil {
		return nil, fsutil.Classify(fmt.Errorf("watch %s: %w", spec.root, err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: path %s is not a directory", fsutil.ErrInvalid, spec.root)
	}
	if !spec.allowNetworkMounts && onNetworkMount(spec.root) {
		return nil, fmt.Errorf("%w: cannot watch path on network filesystem: %s", fsutil.ErrInvalid, spec.root)
	}
	w, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return nil, fmt.Errorf("create watcher: %w", err)
	}
	d := &dirWatch{spec: spec, names: fsutil.NewNames(users), w: w}
	if _, err := d.add(spec.root); err != nil {
		w.Close()
		return nil, err
	}
	return d, nil
}

// Close releases the inotify instance.
func (d *dirWatch) Close() error { return d.w.Close() }

// add watches dir (and, when recursive, every directory below it, not
// following symlinks) and returns the entries found below dir.
func (d *dirWatch) add(dir string) ([]string, error) {
	if !d.spec.recursive {
		return nil, d.addOne(dir)
	}
	var found []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return fsutil.Classify(err)
			}
			return nil
		}
		if p != dir {
			found = append(found, p)
		}
		if !e.IsDir() {
			return nil
		}
		return d.addOne(p)
	})
	return found, err
}

// addOne watches dir, which the caller must be able to read: Linux's
// inotify_add_watch checks that, gVisor's does not, so the directory is
// opened for reading first (as the caller, see openWatch) and must still be
// the same directory once the watch is in place.
func (d *dirWatch) addOne(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fsutil.Classify(fmt.Errorf("watch %s: %w", dir, err))
	}
	defer f.Close()
	if err := d.w.Add(dir); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("%w: inotify watch limit reached adding %s", fsutil.ErrNoSpace, dir)
		}
		return fsutil.Classify(fmt.Errorf("watch %s: %w", dir, err))
	}
	if !sameFile(f, dir) {
		_ = d.w.Remove(dir)
		return fmt.Errorf("%w: watch %s: the directory was replaced while it was added", fsutil.ErrPermission, dir)
	}
	return nil
}

// sameFile reports whether the open f is still what p names.
func sameFile(f *os.File, p string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(p)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// keepalive sends a keepalive message after each quiet interval.
type keepalive struct {
	interval time.Duration
	send     func() error
}

// run delivers events to emit until ctx ends (returning ctx.Err()), emit
// fails, or the watcher fails. ka may be nil.
func (d *dirWatch) run(ctx context.Context, emit func(*fspb.FilesystemEvent) error, ka *keepalive) error {
	var tick <-chan time.Time
	var timer *time.Timer
	if ka != nil {
		timer = time.NewTimer(ka.interval)
		defer timer.Stop()
		tick = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if err := ka.send(); err != nil {
				return err
			}
			timer.Reset(ka.interval)
		case err, ok := <-d.w.Errors:
			if !ok {
				return errors.New("watcher closed")
			}
			return fmt.Errorf("watcher: %w", err)
		case ev, ok := <-d.w.Events:
			if !ok {
				return errors.New("watcher closed")
			}
			for _, fe := range d.convertAs(ev) {
				if err := emit(fe); err != nil {
					return err
				}
			}
			if timer != nil {
				timer.Reset(ka.interval)
			}
		}
	}
}
