package template

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// writeMeta writes dir/template.json (synced) for the tree dir/rootfs.
func (s *Store) writeMeta(def Definition, dir string) error {
	sum, err := summarize(filepath.Join(dir, "rootfs"))
	if err != nil {
		return err
	}
	t := Template{
		Name: def.Name, Created: time.Now().UTC(), SizeBytes: sum.size, Files: sum.files,
		Packages: def.packages(), EnvdVersion: EnvdVersion, UIDBase: s.UIDBase,
		BuildID: randHex(8), Digest: sum.digest, Runtime: def.Runtime, MemoryMB: def.MemoryMB,
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return writeSynced(filepath.Join(dir, metaFile), append(b, '\n'))
}

type summary struct {
	size, files int64
	digest      string
}

// summarize walks root once: the size of its regular files (hardlinks
// once), its entry count, and a digest of its metadata.
func summarize(root string) (summary, error) {
	var sum summary
	h := sha256.New()
	seen := map[inode]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(root, p)
		target, _ := os.Readlink(p) // "" unless a symlink
		fmt.Fprintf(h, "%q %o %d %d %d %d %q\n", rel, st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Sec, target)
		sum.files++
		if id := (inode{st.Dev, st.Ino}); fi.Mode().IsRegular() && !seen[id] {
			seen[id] = true
			sum.size += st.Size
		}
		return nil
	})
	sum.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return sum, err
}

type inode struct{ dev, ino uint64 }

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

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
