package volume

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// Config bounds and places the volumes of one node.
type Config struct {
	Dir           string // <data-dir>/volumes
	DefaultSizeMB int64  // size of a volume whose create names none
	MaxSizeMB     int64  // largest size one volume may ask for
	TotalMB       int64  // bound on the sum of every volume's size
	UIDBase       uint32 // host uid of sandbox root on userns runtimes (crun, runc)
}

// Manager creates, mounts and removes volumes. It is safe for concurrent
// use; mu serialises create, delete and mounting, never held across a
// sandbox operation.
type Manager struct {
	cfg Config
	st  *store.Store
	log *slog.Logger

	mu     sync.Mutex
	userns int // fd of the idmap user namespace, -1 until first needed
}

// Open prepares cfg.Dir and mounts every recorded volume (after a daemon
// or host restart), so that sandboxes find them.
func Open(ctx context.Context, cfg Config, st *store.Store, log *slog.Logger) (*Manager, error) {
	if err := os.MkdirAll(cfg.Dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Dir, 0o711); err != nil { // userns sandbox root traverses it
		return nil, err
	}
	m := &Manager{cfg: cfg, st: st, log: log, userns: -1}
	vols, err := st.Volumes(ctx, "", true)
	if err != nil {
		return nil, err
	}
	for _, v := range vols {
		if err := mountImage(ctx, m.image(v.ID), m.Data(v.ID)); err != nil {
			log.Error("volume cannot be mounted; sandboxes cannot use it", "volume", v.ID, "name", v.Name, "err", err)
		}
	}
	return m, nil
}

// Close releases the idmap namespace fd.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.userns >= 0 {
		_ = closeFD(m.userns)
		m.userns = -1
	}
}

func (m *Manager) dir(id string) string   { return filepath.Join(m.cfg.Dir, id) }
func (m *Manager) image(id string) string { return filepath.Join(m.dir(id), "image") }

// Data is where volume id's filesystem is mounted on the host.
func (m *Manager) Data(id string) string { return filepath.Join(m.dir(id), "data") }

// Source is the host directory bound into a sandbox: the idmapped view
// for userns runtimes, else the data mount.
func (m *Manager) Source(id string, userNS bool) string {
	if userNS {
		return filepath.Join(m.dir(id), "uview")
	}
	return m.Data(id)
}

// Create makes a volume of owner named name, sizeMB MiB (0: the default).
func (m *Manager) Create(ctx context.Context, owner, name string, sizeMB int64) (*store.Volume, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%w: volume name %q must be 1-%d characters of [A-Za-z0-9_-]", ErrInvalid, trunc(name), maxNameLen)
	}
	if sizeMB == 0 {
		sizeMB = m.cfg.DefaultSizeMB
	}
	if sizeMB < 8 || sizeMB > m.cfg.MaxSizeMB {
		return nil, fmt.Errorf("%w: sizeMB must be 8-%d, got %d", ErrInvalid, m.cfg.MaxSizeMB, sizeMB)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkTotal(ctx, sizeMB); err != nil {
		return nil, err
	}
	v := &store.Volume{ID: "vol" + randHex()[:13], Name: name, Owner: owner, SizeMB: sizeMB,
		Token: randHex() + randHex() + randHex() + randHex(), CreatedAt: time.Now().UTC()}
	if _, err := m.st.GetVolume(ctx, owner, name, true); err == nil {
		return nil, fmt.Errorf("%w: a volume named %q exists", ErrExists, name)
	}
	if err := m.build(ctx, v); err != nil {
		m.destroy(v.ID)
		return nil, fmt.Errorf("create volume %q: %w", name, err)
	}
	if err := m.st.InsertVolume(ctx, v); err != nil {
		m.destroy(v.ID)
		if errors.Is(err, store.ErrExists) {
			return nil, fmt.Errorf("%w: a volume named %q exists", ErrExists, name)
		}
		return nil, err
	}
	return v, nil
}

// checkTotal refuses a volume that would take the node past its total.
func (m *Manager) checkTotal(ctx context.Context, sizeMB int64) error {
	vols, err := m.st.Volumes(ctx, "", true)
	if err != nil {
		return err
	}
	sum := sizeMB
	for _, v := range vols {
		sum += v.SizeMB
	}
	if sum > m.cfg.TotalMB {
		return fmt.Errorf("%w: %d MiB more would take the node's volumes to %d MiB, past its %d MiB", ErrQuota, sizeMB, sum, m.cfg.TotalMB)
	}
	return nil
}

// build makes v's directory, image and mount.
func (m *Manager) build(ctx context.Context, v *store.Volume) error {
	for _, d := range []string{m.dir(v.ID), m.Data(v.ID), m.Source(v.ID, true)} {
		if err := os.Mkdir(d, 0o711); err != nil {
			return err
		}
	}
	if err := makeImage(ctx, m.image(v.ID), v.SizeMB); err != nil {
		return err
	}
	if err := mountImage(ctx, m.image(v.ID), m.Data(v.ID)); err != nil {
		return err
	}
	return firstMount(m.Data(v.ID))
}

// destroy unmounts and removes everything of volume id.
func (m *Manager) destroy(id string) error {
	err := errors.Join(unmount(m.Source(id, true)), unmount(m.Data(id)))
	if err != nil {
		return err
	}
	return os.RemoveAll(m.dir(id)) // nothing mounted below: only the image and empty mount points
}

// Get returns owner's volume id.
func (m *Manager) Get(ctx context.Context, owner, id string) (*store.Volume, error) {
	return m.lookup(ctx, owner, id, false)
}

// GetByName returns owner's volume called name.
func (m *Manager) GetByName(ctx context.Context, owner, name string) (*store.Volume, error) {
	return m.lookup(ctx, owner, name, true)
}

func (m *Manager) lookup(ctx context.Context, owner, key string, byName bool) (*store.Volume, error) {
	v, err := m.st.GetVolume(ctx, owner, key, byName)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("volume %q: %w", trunc(key), ErrNotFound)
	}
	return v, err
}

// List returns owner's volumes by name.
func (m *Manager) List(ctx context.Context, owner string) ([]*store.Volume, error) {
	return m.st.Volumes(ctx, owner, false)
}

// Delete removes owner's volume id and its contents. users returns the
// sandboxes (live, paused or being created) that mount it: a volume in use
// is not deleted (ErrInUse). Creates bind a volume under the same lock
// (Ensure), so none can slip in between the check and the removal.
func (m *Manager) Delete(ctx context.Context, owner, id string, users func(volumeID string) []string) error {
	v, err := m.Get(ctx, owner, id)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := users(v.ID); len(u) > 0 {
		return fmt.Errorf("%w: volume %q is mounted by sandboxes %v", ErrInUse, v.Name, u)
	}
	if err := m.st.DeleteVolume(ctx, v.ID); err != nil {
		return err
	}
	if err := m.destroy(v.ID); err != nil {
		m.log.Error("volume record deleted but its files remain", "volume", v.ID, "err", err)
	}
	return nil
}

// Ensure checks that every volume id exists and is mounted, with its
// idmapped view if userNS. The caller stores the sandbox's record (which
// names the volumes) before: Delete, under the same lock, either sees that
// record or has removed the volume before Ensure looks for it.
func (m *Manager) Ensure(ctx context.Context, ids []string, userNS bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		v, err := m.st.GetVolume(ctx, "", id, false)
		if err != nil {
			v, err = m.anyOwner(ctx, id)
		}
		if err != nil {
			return fmt.Errorf("volume %s: %w", id, ErrNotFound)
		}
		if err := m.mount(ctx, v.ID, userNS); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) anyOwner(ctx context.Context, id string) (*store.Volume, error) {
	vols, err := m.st.Volumes(ctx, "", true)
	if err != nil {
		return nil, err
	}
	for _, v := range vols {
		if v.ID == id {
			return v, nil
		}
	}
	return nil, ErrNotFound
}

// mount mounts volume id (and its idmapped view if userNS). Caller holds mu.
func (m *Manager) mount(ctx context.Context, id string, userNS bool) error {
	if err := mountImage(ctx, m.image(id), m.Data(id)); err != nil {
		return err
	}
	if !userNS {
		return nil
	}
	if m.userns < 0 {
		fd, err := usernsFD(m.cfg.UIDBase)
		if err != nil {
			return err
		}
		m.userns = fd
	}
	return mountIDMapped(m.Data(id), m.Source(id, true), m.userns)
}

// Root opens volume id's files for the content API, mounting the volume
// first if needed: never its bare mount point, whose writes would land on
// the host's disk, outside the quota.
func (m *Manager) Root(ctx context.Context, id string) (*Root, error) {
	var err error
	if !mounted(m.Data(id)) { // the common case needs no lock
		m.mu.Lock()
		err = m.mount(ctx, id, false)
		m.mu.Unlock()
	}
	if err != nil || !mounted(m.Data(id)) {
		return nil, fmt.Errorf("volume %s is not mounted: %w", id, errors.Join(ErrUnavailable, err))
	}
	return OpenRoot(m.Data(id))
}

// Authorize reports whether token is volume v's content token.
func Authorize(v *store.Volume, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(v.Token), []byte(token)) == 1
}

// ByID returns volume id whatever its owner: for the content API, where the
// volume's own bearer token (not an API key) is the authority.
func (m *Manager) ByID(ctx context.Context, id string) (*store.Volume, error) {
	v, err := m.anyOwner(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("volume %q: %w", trunc(id), ErrNotFound)
	}
	return v, err
}

// DefaultSizeMB is the size a create that names none gets.
func (m *Manager) DefaultSizeMB() int64 { return m.cfg.DefaultSizeMB }
