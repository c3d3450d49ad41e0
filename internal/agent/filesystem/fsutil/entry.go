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
// symlink, as envd does: a symlink is reported as FILE_TYPE_SYMLINK with its
// resolved target (or its raw target when dangling), the link's own size and
// permissions string, and the target's permission bits as mode.
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
		target, mode := symlinkTarget(p)
		e.SymlinkTarget, e.Mode = &target, mode
	}
	return e
}

// symlinkTarget returns where the link p leads and the target's permission
// bits (0 when the link dangles).
func symlinkTarget(p string) (string, uint32) {
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		raw, rerr := os.Readlink(p)
		if rerr != nil {
			return p, 0
		}
		return raw, 0
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return resolved, 0
	}
	return resolved, uint32(fi.Mode().Perm())
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
