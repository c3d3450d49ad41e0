package filesystem

import (
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// opOrder is the order in which envd reports the operations of one event.
var opOrder = []struct {
	op fsnotify.Op
	t  fspb.EventType
}{
	{fsnotify.Create, fspb.EventType_EVENT_TYPE_CREATE},
	{fsnotify.Rename, fspb.EventType_EVENT_TYPE_RENAME},
	{fsnotify.Chmod, fspb.EventType_EVENT_TYPE_CHMOD},
	{fsnotify.Write, fspb.EventType_EVENT_TYPE_WRITE},
	{fsnotify.Remove, fspb.EventType_EVENT_TYPE_REMOVE},
}

// convertAs is convert with the watch user's credentials when it looks at
// the filesystem (a new directory to watch, or entries to describe).
func (d *dirWatch) convertAs(ev fsnotify.Event) []*fspb.FilesystemEvent {
	if !d.spec.includeEntry && !(d.spec.recursive && ev.Op.Has(fsnotify.Create)) {
		return d.convert(ev)
	}
	var out []*fspb.FilesystemEvent
	_ = identity.As(d.spec.user, func() error {
		out = d.convert(ev)
		return nil
	})
	return out
}

// convert turns one inotify event into protocol events, one per operation.
// When recursive, a new directory gets watched, and what was created in it
// before its watch existed is reported as created too.
func (d *dirWatch) convert(ev fsnotify.Event) []*fspb.FilesystemEvent {
	var out []*fspb.FilesystemEvent
	for _, o := range opOrder {
		if ev.Op.Has(o.op) {
			out = append(out, d.event(ev.Name, o.t))
		}
	}
	if d.spec.recursive && ev.Op.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			found, _ := d.add(ev.Name)
			for _, p := range found {
				out = append(out, d.event(p, fspb.EventType_EVENT_TYPE_CREATE))
			}
		}
	}
	return out
}

// event builds the event for path p, named relative to the watched root.
func (d *dirWatch) event(p string, t fspb.EventType) *fspb.FilesystemEvent {
	name, err := filepath.Rel(d.spec.root, p)
	if err != nil {
		name = p
	}
	fe := &fspb.FilesystemEvent{Name: name, Type: t}
	if d.spec.includeEntry {
		if e, err := fsutil.Entry(p, d.names); err == nil {
			fe.Entry = e
		}
	}
	return fe
}

// Network filesystem magic numbers (linux/magic.h).
const (
	nfsMagic  = 0x6969
	cifsMagic = 0xFF534D42
	smbMagic  = 0x517B
	smb2Magic = 0xFE534D42
	fuseMagic = 0x65735546
)

// onNetworkMount reports whether p is on NFS, CIFS/SMB or FUSE.
func onNetworkMount(p string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case nfsMagic, cifsMagic, smbMagic, smb2Magic, fuseMagic:
		return true
	}
	return false
}
