// Package template builds and finds the immutable root filesystems that
// sandboxes start from.
//
// Templates are built by sbx itself (debootstrap, then apt-get and a setup
// script in a chroot), once, into a temporary directory that is renamed into
// place when complete: a crash or a cancelled build never leaves a half
// template, only a .build-* directory that the next Build removes. A built
// template is never written again; sandboxes use it only as the lower layer
// of an overlay (package layer).
//
// Layout under Store.Dir (<data-dir>/templates):
//
//	<name>/rootfs          owned by host root (gVisor)
//	<name>/rootfs-userns   the same tree, every uid and gid shifted by UIDBase
//	                       (crun, runc: sandbox uid 0..65535 -> host UIDBase..)
//	<name>/template.json   metadata (Template)
//	.build-<name>-<rand>   a build in progress (or an interrupted one)
//	.lock                  held (flock) while building
package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ErrNotFound is returned (wrapped) for an unknown or unbuilt template.
var ErrNotFound = errors.New("template not found")

// EnvdVersion is the envd protocol version the templates' agent speaks
// (equal to api.EnvdVersion; a test checks it).
const EnvdVersion = "0.6.4"

// Template is a built template, as recorded in its template.json.
type Template struct {
	Name         string    `json:"name"`
	Rootfs       string    `json:"-"`
	RootfsUserNS string    `json:"-"`
	Created      time.Time `json:"created"`
	SizeBytes    int64     `json:"sizeBytes"` // regular files of rootfs, hardlinks once
	Files        int64     `json:"files"`     // entries of rootfs
	Packages     []string  `json:"packages"`
	EnvdVersion  string    `json:"envdVersion"`
	UIDBase      uint32    `json:"uidBase"`
	BuildID      string    `json:"buildId"`
	// Digest is "sha256:<hex>" of rootfs's metadata (paths, modes, owners,
	// sizes, mtimes, link targets): it changes with any rebuild that differs.
	Digest  string `json:"digest"`
	Runtime string `json:"runtime,omitempty"` // preferred runtime, "" for the default
	// MemoryMB is the memory its sandboxes get by default (0: the daemon's).
	MemoryMB int `json:"memoryMB,omitempty"`
}

// Store is a directory of templates. Get and List are safe to call while a
// Build runs (a template appears atomically); builds are serialized by a
// file lock, across processes too.
type Store struct {
	Dir     string // <data-dir>/templates
	UIDBase uint32 // host uid of sandbox root in rootfs-userns, e.g. 100000
	Mirror  string // Debian mirror, default DefaultMirror
	// Seed, if set, is a debootstrapped bookworm tree copied instead of
	// running debootstrap (tests, air-gapped hosts). Packages of the
	// definition it lacks are installed with apt-get.
	Seed string
}

// DefaultMirror is the Debian mirror used when Store.Mirror is empty.
const DefaultMirror = "http://deb.debian.org/debian"

const metaFile = "template.json"

// Get returns the built template name; the error wraps ErrNotFound when it
// is not built (or the name is not a valid template name).
func (s *Store) Get(name string) (*Template, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%w: invalid name %q", ErrNotFound, name)
	}
	dir := filepath.Join(s.Dir, name)
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q (build it with: sbx template build %s)", ErrNotFound, name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	var t Template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("template %s: corrupt %s: %w", name, metaFile, err)
	}
	t.Rootfs, t.RootfsUserNS = filepath.Join(dir, "rootfs"), filepath.Join(dir, "rootfs-userns")
	return &t, nil
}

// List returns every built template, sorted by name. Entries that are not
// templates (build directories, the lock, stray files) are skipped.
func (s *Store) List() ([]*Template, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	var out []*Template
	for _, e := range ents {
		t, err := s.Get(e.Name())
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ValidName accepts lowercase names of letters, digits, '-', '_' and '.',
// not starting with '.', at most 64 bytes.
func ValidName(n string) bool {
	if n == "" || len(n) > 64 || strings.HasPrefix(n, ".") {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
