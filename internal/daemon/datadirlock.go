package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockFileName is the file in the data dir whose exclusive flock(2) the
// serving daemon holds for its lifetime (it holds the daemon's pid, for
// the message of a second start). The kernel drops the lock when the
// daemon's descriptor goes, kill -9 included; the file itself stays.
const LockFileName = "serve.lock"

// ErrDataDirBusy is the error of a start on a data dir another sbx serve
// holds: two daemons on one dir break the audit chain and reap each
// other's sandboxes.
var ErrDataDirBusy = errors.New("data dir in use by another sbx serve")

// lockDataDir takes the data dir's exclusive lock without waiting: on a
// held lock it fails at once with ErrDataDirBusy naming dir and, when the
// holder wrote it, its pid. The descriptor is close-on-exec, so no runtime
// or shim the daemon starts inherits the lock. release drops it.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := flock(f); err != nil {
		holder := lockHolder(f)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by %s (one daemon per data dir; stop it first, or use another --data-dir)", ErrDataDirBusy, dir, holder)
		}
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(pid, 0) // only informative: the lock is the flock
	}
	return func() { f.Close() }, nil
}

// flock takes f's exclusive lock, failing with EWOULDBLOCK if it is held.
func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB); ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// lockHolder names the lock's holder from the pid it wrote: "pid N", or
// "a process of unknown pid" while it has not written it yet.
func lockHolder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return "a process of unknown pid"
	}
	return "sbx serve pid " + strconv.Itoa(pid)
}
