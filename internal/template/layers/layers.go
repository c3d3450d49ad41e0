// Package layers keeps the immutable, content-addressed directory trees that
// templates are stacked from: image layers (by DiffID) and build-step results
// (by cache key). A layer is written once, into a temporary directory that is
// renamed into place when complete, and never changed afterwards; sandboxes
// and builds use layers only as overlayfs lower directories.
//
// Layout under Store.Dir (short paths: the overlay mount option holding every
// lower of a template must fit in one page):
//
//	<key24>/            0700 root: no host user reaches the trees' setuid
//	                    files (layer ids of public images are guessable, and
//	                    a crun sandbox sees its layers' paths in mountinfo)
//	<key24>/r/fs        the tree, owned by host root (gVisor); r is 0700
//	<key24>/fs-userns   the same tree shifted into the user-namespace range
//	                    (crun, runc), made on first use
//	<key24>/size        bytes of the tree's regular files (written at commit)
//	<key24>/oci.json    the layer's OCI digests once pushed to or pulled from a
//	                    template registry (package dist)
//	<key24>/users/<o>   one empty file per store owner (daemon) that uses the
//	                    layer: daemons sharing Dir each release only their
//	                    own use, and the last one removes the layer
//	.tmp-*              a layer being written (or an interrupted one)
//
// <key24> is the first 24 hex digits of the key (96 bits).
package layers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/layer"
)

// ErrNotFound is returned (wrapped) for a layer that is not in the store.
var ErrNotFound = errors.New("layer not found")

// Store is a directory of layers, safe for concurrent use (also by several
// processes sharing Dir: commits are renames).
type Store struct {
	Dir string
	// Owner names this process's uses of layers (a daemon's persistent id);
	// "" marks nothing and Release removes nothing.
	Owner string
	// Shift makes dst a copy of src with owners moved into the user
	// namespace range (template.ShiftCopy); nil disables fs-userns.
	Shift func(ctx context.Context, src, dst string) error

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per key: one fill or shift at a time
}

// ID returns the directory name of key: its first 24 lowercase hex digits.
// Keys are hex digests, optionally prefixed "sha256:".
func ID(key string) (string, error) {
	key = strings.TrimPrefix(key, "sha256:")
	if len(key) < 24 {
		return "", fmt.Errorf("layer key %q: too short", key)
	}
	for _, c := range key {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", fmt.Errorf("layer key %q: not lowercase hex", key)
		}
	}
	return key[:24], nil
}

// Path returns the tree of layer id (ID's result) for gVisor.
func (s *Store) Path(id string) string { return filepath.Join(s.Dir, id, "r", "fs") }

// PathUserNS returns the shifted tree of layer id.
func (s *Store) PathUserNS(id string) string { return filepath.Join(s.Dir, id, "fs-userns") }

// Has reports whether layer id is committed.
func (s *Store) Has(id string) bool {
	_, err := os.Stat(filepath.Join(s.Dir, id, "size"))
	_, terr := os.Stat(s.Path(id)) // a layer of an older layout is rewritten
	return err == nil && terr == nil
}

// Ensure returns the tree of key, calling fill on an empty temporary
// directory to make it first if it is missing. fill's tree is committed only
// if fill succeeds; on error nothing of it remains.
func (s *Store) Ensure(ctx context.Context, key string, fill func(dir string) error) (string, error) {
	id, err := ID(key)
	if err != nil {
		return "", err
	}
	unlock := s.lock(id)
	defer unlock()
	if s.Has(id) {
		return s.Path(id), nil
	}
	if err := s.commit(ctx, id, fill); err != nil {
		return "", fmt.Errorf("layer %s: %w", id, err)
	}
	return s.Path(id), nil
}

func (s *Store) commit(ctx context.Context, id string, fill func(dir string) error) (err error) {
	if err := os.MkdirAll(s.Dir, 0o711); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.Dir, ".tmp-"+id+"-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, layer.Cleanup(tmp))
		}
	}()
	unlock, err := lockDir(tmp) // a write in progress: RemoveStale of another process leaves it
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Chmod(tmp, 0o700); err != nil { // see private
		return err
	}
	if err := os.Mkdir(filepath.Join(tmp, "r"), 0o700); err != nil {
		return err
	}
	tree := filepath.Join(tmp, "r", "fs")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	if err := fill(tree); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	size, err := treeSize(tree)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "size"), []byte(strconv.FormatInt(size, 10)), 0o644); err != nil {
		return err
	}
	dst := filepath.Join(s.Dir, id)
	if s.Has(id) { // another process sharing Dir committed it meanwhile
		return layer.Cleanup(tmp)
	}
	if err := layer.Cleanup(dst); err != nil { // an uncommitted leftover
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if s.Has(id) { // lost a race with another process: theirs is the same content
			return layer.Cleanup(tmp)
		}
		return err
	}
	return nil
}

// EnsureUserNS returns the shifted tree of layer id, making it first.
func (s *Store) EnsureUserNS(ctx context.Context, id string) (string, error) {
	if s.Shift == nil {
		return "", fmt.Errorf("layer %s: no user-namespace copies on this store", id)
	}
	unlock := s.lock(id)
	defer unlock()
	if !s.Has(id) {
		return "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err := s.private(id); err != nil {
		return "", fmt.Errorf("layer %s: %w", id, err)
	}
	dst := s.PathUserNS(id)
	if _, err := os.Stat(filepath.Join(s.Dir, id, "userns-done")); err == nil {
		return dst, nil
	}
	if err := layer.Cleanup(dst); err != nil {
		return "", err
	}
	if err := s.Shift(ctx, s.Path(id), dst); err != nil {
		return "", fmt.Errorf("layer %s: shift: %w", id, err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, id, "userns-done"), nil, 0o644); err != nil {
		return "", err
	}
	return dst, nil
}

// private makes layer id's directory 0700 root (stores before made it
// 0711). Its fs-userns tree is owned by the user-namespace range, and a
// team's build may leave setuid and setgid files there (as root in its build
// sandbox): reached by a host user, one runs as the range's root uid, the
// uid of every crun/runc sandbox's root (their trees, their processes). No
// sandbox needs the path: a sandbox reads its layers through the overlay
// the daemon mounts, and overlayfs reads lower layers with the mounter's
// credentials.
func (s *Store) private(id string) error {
	dir := filepath.Join(s.Dir, id)
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() == 0o700 {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// Use records that Owner uses layer id (idempotent).
func (s *Store) Use(id string) error {
	if s.Owner == "" {
		return nil
	}
	unlock := s.lock(id)
	defer unlock()
	if !s.Has(id) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	dir := filepath.Join(s.Dir, id, "users")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, s.Owner), nil, 0o600)
}

// Owned reports whether Owner uses layer id.
func (s *Store) Owned(id string) bool {
	if s.Owner == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(s.Dir, id, "users", s.Owner))
	return err == nil
}

// Release drops Owner's use of layer id and removes the layer when no
// owner uses it any more. It reports whether the layer was removed.
func (s *Store) Release(id string) (bool, error) {
	if s.Owner == "" {
		return false, nil
	}
	unlock := s.lock(id)
	defer unlock()
	users := filepath.Join(s.Dir, id, "users")
	if err := os.Remove(filepath.Join(users, s.Owner)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if ents, err := os.ReadDir(users); err == nil && len(ents) > 0 {
		return false, nil
	}
	return true, layer.Cleanup(filepath.Join(s.Dir, id))
}

// DiskSize is what layer id holds on this node's disk: its size, twice
// when it has a user-namespace copy (fs-userns, a full copy made for crun
// and runc, done or being made). Before, the copy counted nowhere: every
// template used by (or built on a node with) crun or runc held twice what
// the team's disk quota and --template-quota-mb charged for it.
func (s *Store) DiskSize(id string) int64 {
	n := s.Size(id)
	if _, err := os.Lstat(s.PathUserNS(id)); err == nil {
		n *= 2
	}
	return n
}

// Size returns the committed size of layer id in bytes (0 if unknown).
func (s *Store) Size(id string) int64 {
	b, err := os.ReadFile(filepath.Join(s.Dir, id, "size"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// List returns the ids of committed layers.
func (s *Store) List() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") && s.Has(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Remove deletes layer id (idempotent). The caller makes sure nothing uses it.
func (s *Store) Remove(id string) error {
	if _, err := ID(id); err != nil || len(id) != 24 {
		return fmt.Errorf("remove layer %q: bad id", id)
	}
	unlock := s.lock(id)
	defer unlock()
	return layer.Cleanup(filepath.Join(s.Dir, id))
}

// RemoveStale deletes interrupted writes (.tmp-*): those no process is
// writing (each write holds a flock on its directory), so that a daemon
// starting on a shared Dir never removes another process's write in
// progress (another daemon's build, `sbx template build`).
func (s *Store) RemoveStale() error {
	return layer.CleanupMatching(s.Dir, func(name string) bool {
		return strings.HasPrefix(name, ".tmp-") && !busy(filepath.Join(s.Dir, name))
	})
}

// lockDir takes an exclusive flock on dir, held until unlock.
func lockDir(dir string) (unlock func(), err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// busy reports whether a process holds dir's flock (lockDir).
func busy(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil
}

func (s *Store) lock(id string) func() {
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*sync.Mutex{}
	}
	l, ok := s.locks[id]
	if !ok {
		l = &sync.Mutex{}
		s.locks[id] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// treeSize sums the sizes of the regular files under root, hardlinks once.
func treeSize(root string) (int64, error) {
	var n int64
	seen := map[[2]uint64]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if k := [2]uint64{st.Dev, st.Ino}; !seen[k] {
			seen[k] = true
			n += st.Size
		}
		return nil
	})
	return n, err
}
