// Package template knows the built-in templates: their definitions (the
// package lists) and their registrations in the templates directory.
//
// A built-in template is built by the template builder (package builder)
// like any other: a Debian bootstrap source, then the provisioning every
// image gets, each a content-addressed layer of the layer store
// (<templates-dir>/layers). `sbx template build NAME` builds it in-process
// and registers it here as files, so every daemon sharing the templates
// directory serves it whatever its database holds.
//
// Layout under Store.Dir (<data-dir>/templates):
//
//	<name>/template.json   the registration (Template): its layer stack
//	<name>/rootfs          symlink to the Debian layer's tree (tests and
//	                       benchmarks read a plain Debian tree there)
//	<name>/rootfs-userns   symlink to that layer's user-namespace copy
//	.build-<name>-<rand>   a registration being written (or an interrupted one)
//	.old-<name>-<rand>     a replaced registration being removed
//	.lock                  held (flock) while a built-in is built
//	layers/                the layer store
//
// A <name>/template.json without layers is the layout of sbx before the
// builder made built-ins (a whole tree in <name>/rootfs): it is not served,
// and `sbx template build NAME` replaces it.
package template

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/layer"
)

// ErrNotFound is returned (wrapped) for an unknown or unbuilt template.
var ErrNotFound = errors.New("template not found")

// ErrOldLayout is returned (wrapped, with ErrNotFound) for a template of
// the layout before built-ins were made by the builder.
var ErrOldLayout = errors.New("built by an older sbx")

// EnvdVersion is the envd protocol version the templates' agent speaks
// (equal to api.EnvdVersion; a test checks it).
const EnvdVersion = "0.6.4"

// Template is a registered built-in template, as in its template.json.
type Template struct {
	Name        string    `json:"name"`
	Created     time.Time `json:"created"`
	SizeBytes   int64     `json:"sizeBytes"` // of its layers' regular files
	Packages    []string  `json:"packages"`
	EnvdVersion string    `json:"envdVersion"`
	UIDBase     uint32    `json:"uidBase"`
	BuildID     string    `json:"buildId"`
	// Layers are the ids of its layers in the layer store, bottom first.
	Layers []string `json:"layers"`
	// Key is the builder's cache key of the stack: builds from this
	// template chain their steps' keys on it.
	Key     string `json:"key"`
	Runtime string `json:"runtime,omitempty"` // preferred runtime, "" for the default
	// MemoryMB is the memory its sandboxes get by default (0: the daemon's).
	MemoryMB int `json:"memoryMB,omitempty"`
}

// Store is the directory of built-in registrations. Get and List are safe
// while Register runs: a registration appears (or is replaced) by rename.
type Store struct {
	Dir string // <data-dir>/templates
}

const metaFile = "template.json"

// Get returns the registered template name; the error wraps ErrNotFound
// when there is none (or only one of an older layout, or the name is not a
// valid template name).
func (s *Store) Get(name string) (*Template, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%w: invalid name %.64q", ErrNotFound, name)
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, name, metaFile))
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
	if len(t.Layers) == 0 || t.Key == "" {
		return nil, fmt.Errorf("%w: %q was %w (rebuild it with: sbx template build %s)", ErrNotFound, name, ErrOldLayout, name)
	}
	return &t, nil
}

// List returns every registered template, sorted by name. Entries that are
// not registrations (build directories, layers, stray files) are skipped.
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

// Lock takes Dir/.lock exclusively, waiting until ctx ends: built-in
// builds hold it, so that one process's Register never removes another's
// registration in progress and a definition is built once.
func (s *Store) Lock(ctx context.Context) (unlock func(), err error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
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

// Register writes t's registration, replacing whatever <Dir>/<t.Name>
// held (an older layout's tree included, which is then removed). links
// maps names in the registration directory to symlink targets. A crash
// leaves the old registration or the new one, plus a .build- or .old-
// directory that the next Register removes. Call it with Lock held.
func (s *Store) Register(t *Template, links map[string]string) (err error) {
	if !ValidName(t.Name) {
		return fmt.Errorf("register template: invalid name %q", t.Name)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	if err := s.removeStale(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.Dir, ".build-"+t.Name+"-")
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
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(tmp, name)); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(tmp, metaFile), append(b, '\n')); err != nil {
		return err
	}
	return s.replace(tmp, filepath.Join(s.Dir, t.Name))
}

// replace renames dir to dst, moving what dst held aside and removing it.
func (s *Store) replace(dir, dst string) error {
	old := ""
	if _, err := os.Lstat(dst); err == nil {
		o, err := os.MkdirTemp(s.Dir, ".old-"+filepath.Base(dst)+"-")
		if err != nil {
			return err
		}
		old = filepath.Join(o, "t")
		if err := os.Rename(dst, old); err != nil {
			return errors.Join(err, os.Remove(o))
		}
	}
	if err := os.Rename(dir, dst); err != nil {
		return err
	}
	if err := syncDir(s.Dir); err != nil {
		return err
	}
	if old != "" {
		return layer.Cleanup(filepath.Dir(old))
	}
	return nil
}

// removeStale removes what interrupted registrations left.
func (s *Store) removeStale() error {
	return layer.CleanupMatching(s.Dir, func(name string) bool {
		return strings.HasPrefix(name, ".build-") || strings.HasPrefix(name, ".old-")
	})
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

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
