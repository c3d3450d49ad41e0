// Package template builds and finds the immutable root filesystems sandboxes
// start from. Templates are built by sbx itself (debootstrap + apt in a
// chroot), once, into a temporary directory that is renamed into place when
// complete, so a crash never leaves a half template. Each template has two
// trees: rootfs (owned by host root, for gVisor) and rootfs-userns (every uid
// and gid shifted by UIDBase, for runtimes that map sandbox root to an
// unprivileged host range).
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

// Template is a built template.
type Template struct {
	Name         string    `json:"name"`
	Rootfs       string    `json:"-"`
	RootfsUserNS string    `json:"-"`
	Created      time.Time `json:"created"`
	SizeBytes    int64     `json:"sizeBytes"`
	Packages     []string  `json:"packages"`
	UIDBase      uint32    `json:"uidBase"`
	Runtime      string    `json:"runtime,omitempty"`
}

// Store is the template directory.
type Store struct {
	Dir     string
	UIDBase uint32
	Mirror  string // Debian mirror, default http://deb.debian.org/debian
	// Seed, if set, is a debootstrapped tree copied instead of running
	// debootstrap (tests and air-gapped hosts); it must hold Definition.Base.
	Seed string
}

const metaFile = "template.json"

// Get returns a built template.
func (s *Store) Get(name string) (*Template, error) {
	if !validName(name) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	dir := filepath.Join(s.Dir, name)
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q (build it with: sbx template build %s)", ErrNotFound, name, name)
	}
	if err != nil {
		return nil, err
	}
	var t Template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("template %s: corrupt %s: %w", name, metaFile, err)
	}
	t.Rootfs, t.RootfsUserNS = filepath.Join(dir, "rootfs"), filepath.Join(dir, "rootfs-userns")
	return &t, nil
}

// List returns every built template, by name.
func (s *Store) List() ([]*Template, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Template
	for _, e := range ents {
		if t, err := s.Get(e.Name()); err == nil {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func validName(n string) bool {
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
