package volume

import (
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// Entry is E2B's VolumeEntryStat.
type Entry struct {
	Name   string    `json:"name"`
	Type   string    `json:"type"` // file, directory, symlink, unknown
	Path   string    `json:"path"`
	Size   int64     `json:"size"`
	Mode   uint32    `json:"mode"` // permission bits
	UID    uint32    `json:"uid"`
	GID    uint32    `json:"gid"`
	Atime  time.Time `json:"atime"`
	Mtime  time.Time `json:"mtime"`
	Ctime  time.Time `json:"ctime"`
	Target string    `json:"target,omitempty"`
}

// Stat describes p itself (a symlink is reported as one, with its target).
func (r *Root) Stat(p string) (Entry, error) {
	dfd, base, err := r.parent(p)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(dfd)
	return statAt(dfd, base, p)
}

// statAt describes base in dfd ("" = dfd itself), named p.
func statAt(dfd int, base, p string) (Entry, error) {
	var st unix.Stat_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if base == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if err := unix.Fstatat(dfd, base, &st, flags); err != nil {
		return Entry{}, pathErr(p, err)
	}
	e := Entry{Name: path.Base(p), Path: p, Size: st.Size, Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid,
		Atime: ts(st.Atim), Mtime: ts(st.Mtim), Ctime: ts(st.Ctim), Type: "unknown"}
	if p == "/" {
		e.Name = ""
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Type = "file"
	case unix.S_IFDIR:
		e.Type = "directory"
	case unix.S_IFLNK:
		e.Type = "symlink"
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(dfd, base, buf); err == nil {
			e.Target = string(buf[:n])
		}
	}
	return e, nil
}

func ts(t unix.Timespec) time.Time { return time.Unix(t.Sec, t.Nsec).UTC() }
