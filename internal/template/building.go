package template

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// A process building the built-in template NAME (sbx template build NAME,
// e.g. in the background of scripts/up.sh) holds an exclusive flock on
// <dir>/.building-NAME for the whole build, waiting included. A daemon
// sharing dir asks Building before it answers "not found" for NAME, so
// creates of a template that is on its way answer "retry later" instead.
// The kernel drops the lock when the builder exits, however it exits.

// buildingPath is the lock file of name's builds; name must be a built-in
// (a key of Definitions), never a request's string.
func buildingPath(dir, name string) (string, error) {
	if _, ok := Definitions[name]; !ok {
		return "", fmt.Errorf("%q: %w (built-ins: %v)", name, ErrNotFound, Names())
	}
	return filepath.Join(dir, ".building-"+name), nil
}

// MarkBuilding takes name's build lock in dir, waiting (polling, until ctx
// ends) while another process holds it. done releases it.
func MarkBuilding(ctx context.Context, dir, name string) (done func(), err error) {
	p, err := buildingPath(dir, name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Building reports whether some process holds name's build lock in dir. It
// is false for a name that is not a built-in, and on any error.
func Building(dir, name string) bool {
	p, err := buildingPath(dir, name)
	if err != nil {
		return false
	}
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // never built here, or not readable: not known to be building
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}
