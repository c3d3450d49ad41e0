package fsutil

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"google.golang.org/protobuf/types/known/timestamppb"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
)

// Entry describes the file at the absolute path p without following a final
// symlink, as envd does. A symlink is reported by what it leads to: the
// target's type (FILE_TYPE_FILE or _DIRECTORY, what E2B's SDK tests expect)
// and permission bits as mode, its resolved absolute target as
// symlink_target, and the link's own size and permissions string
// ("Lrwxrwxrwx"). A dangling or looping link has FILE_TYPE_UNSPECIFIED (the
// SDK leaves such entries out of a listing), mode 0 and its raw target.
func Entry(p string, names *Names) (*fspb.EntryInfo, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, Classify(fmt.Errorf("stat %s: %w", p, err))
	}
	return EntryFromInfo(p, fi, names), nil
}

// EntryFromInfo builds the EntryInfo of p from its Lstat result fi.
func EntryFromInfo(p string, fi fs.FileInfo, names *Names) *fspb.EntryInfo {
	e := &fspb.EntryInfo{
		Name:         filepath.Base(p),
		Type:         fileType(fi.Mode()),
		Path:         p,
		Size:         fi.Size(),
		Mode:         uint32(fi.Mode().Perm()),
		Permissions:  fi.Mode().String(),
		ModifiedTime: timestamppb.New(fi.ModTime()),
		Metadata:     ReadMetadata(p),
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.Owner, e.Group = names.User(st.Uid), names.Group(st.Gid)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, tfi := symlinkTarget(p)
		e.SymlinkTarget, e.Type, e.Mode = &target, fspb.FileType_FILE_TYPE_UNSPECIFIED, 0
		if tfi != nil {
			e.Type, e.Mode = fileType(tfi.Mode()), uint32(tfi.Mode().Perm())
		}
	}
	return e
}

// symlinkTarget returns where the link p leads and what is there (nil when
// the link dangles or loops; the target is then the link's raw text).
func symlinkTarget(p string) (string, fs.FileInfo) {
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		raw, rerr := os.Readlink(p)
		if rerr != nil {
			return p, nil
		}
		return raw, nil
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return resolved, nil
	}
	return resolved, fi
}

func fileType(m fs.FileMode) fspb.FileType {
	switch {
	case m.IsRegular():
		return fspb.FileType_FILE_TYPE_FILE
	case m.IsDir():
		return fspb.FileType_FILE_TYPE_DIRECTORY
	case m&fs.ModeSymlink != 0:
		return fspb.FileType_FILE_TYPE_SYMLINK
	}
	return fspb.FileType_FILE_TYPE_UNSPECIFIED
}
