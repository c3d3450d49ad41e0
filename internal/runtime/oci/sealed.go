package oci

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// crun and runc protect the host binary from a container that would write
// to it through /proc/<pid>/exe (CVE-2019-5736) by copying themselves into a
// sealed memfd and re-executing that copy on every run: a bind mount or a
// temporary file, a second exec and a second round of dynamic linking, a
// good part of what crun costs per create. They skip it when they already
// run from a memfd sealed against writes, growth, shrinking and new seals.
// The backend keeps such a copy of the binary and executes it
// through a symlink <StateDir>/.exe/N/<name> → /proc/<daemon pid>/fd/N, so
// the protection holds with one exec per command and the process is still
// called crun (a process's name is the last element of the path it was
// executed by: /proc/<pid>/fd/N would name it "N").
//
// The link names the daemon's descriptor table, not the child's
// (/proc/self): between fork and exec Go's child moves its error pipe to
// one past its highest stdio descriptor when the pipe's number is lower
// (syscall.forkAndExecInChild, "Pass 1"), over whatever the child has
// there; when that was N the exec met a pipe: "fork/exec .exe/N/crun:
// permission denied", seen at a few hundred sandboxes, when descriptor
// numbers are reused out of order (TestSealedBinaryChildFdShuffle). The
// parent's table is not touched by the child, and N stays the copy there
// (copies are never closed).

// fullSeals are the seals crun and runc check for.
const fullSeals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// sealedBinary is an immutable in-memory copy of a runtime binary, renewed
// when the file on disk changes (an upgrade takes effect at the next
// command). Copies are never closed, and kept reachable so no finalizer
// closes them: a command being started may still be resolving
// /proc/<pid>/fd/N of an older one, and a reused fd number there would run
// another file.
type sealedBinary struct {
	path  string
	links string     // directory of the symlinks to the copies
	mu    sync.Mutex // guards id, cur, exe and old
	id    string     // binaryID of the file cur was copied from
	cur   *os.File
	exe   string     // what to execute for cur
	old   []*os.File // earlier copies
}

// execPath returns the path to execute for s.path: its sealed copy, made or
// renewed as needed. If no copy can be made it returns s.path (the runtime
// then clones itself, as without sbx).
func (s *sealedBinary) execPath() string {
	id := binaryID(s.path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || id != s.id {
		f, err := sealedCopy(s.path)
		if err != nil {
			return s.path
		}
		if s.cur != nil {
			s.old = append(s.old, s.cur)
		}
		s.cur, s.id, s.exe = f, id, s.link(f)
	}
	return s.exe
}

// link makes the symlink to f's descriptor in this process's table
// (/proc/<pid>, never the child's /proc/self: see above) named like the
// binary and returns its path, or the descriptor's path if it cannot.
func (s *sealedBinary) link(f *os.File) string {
	fdPath := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd())
	if s.links == "" {
		return fdPath
	}
	l := filepath.Join(s.links, strconv.Itoa(int(f.Fd())), filepath.Base(s.path))
	if err := os.MkdirAll(filepath.Dir(l), 0o700); err != nil {
		return fdPath
	}
	_ = os.Remove(l) // an earlier daemon's, for its own descriptor N
	if err := os.Symlink(fdPath, l); err != nil {
		return fdPath
	}
	return l
}

// sealedCopy copies the file at path into a memfd and seals it. Only ELF
// binaries are copied: a script's interpreter would reopen /proc/self/fd/N
// after the exec closed it.
func sealedCopy(path string) (*os.File, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(src, magic); err != nil || string(magic) != "\x7fELF" {
		return nil, fmt.Errorf("%s: not an ELF binary", path)
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("sbx:"+filepath.Base(path), unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, fullSeals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal copy of %s: %w", path, err)
	}
	return f, nil
}
