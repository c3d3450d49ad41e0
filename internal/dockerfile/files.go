package dockerfile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
)

// entry is one file of a COPY source: its path relative to the context
// (posix, "" for the context itself) and its absolute path.
type entry struct{ rel, full string }

// collect returns the files of src as the SDK's getAllFilesInPath does:
// the matches of the glob src, plus everything below each match that is a
// directory (not a symlink), sorted by full path; and the context opened as
// an os.Root, through which the caller reads them (and closes it). A match
// the root does not reach (a symlinked directory of the context pointing
// outside it, as a cloned repository may hold: `link -> /home/me/.ssh` with
// `COPY link/id_rsa`) is an error: no file outside the context is read.
func collect(contextDir, src string, ignore []string) (*os.Root, []entry, error) {
	if err := checkSource(src); err != nil {
		return nil, nil, err
	}
	root, err := filepath.Abs(contextDir)
	if err != nil {
		return nil, nil, fmt.Errorf("context %s: %w", contextDir, err)
	}
	files, err := match(root, src, ignore)
	if err != nil {
		return nil, nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil, fmt.Errorf("context %s: %w", contextDir, err)
	}
	for _, f := range files {
		if _, err := r.Lstat(orDot(f.rel)); err != nil {
			r.Close()
			return nil, nil, fmt.Errorf("%s is not inside the build context (a symlink leads out of it?): %w", f.rel, err)
		}
	}
	return r, files, nil
}

// match lists the files of src under root, sorted by full path.
func match(root, src string, ignore []string) ([]entry, error) {
	ig := newIgnorer(root, ignore)
	set := map[string]bool{}
	for _, rel := range glob(root, src, ig) {
		set[rel] = true
		if fi, err := os.Lstat(filepath.Join(root, rel)); err == nil && fi.IsDir() {
			for _, r := range glob(root, path.Join(orDot(rel), "**/*"), ig) {
				set[r] = true
			}
		}
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("no files found in %s", filepath.Join(root, src))
	}
	return sortEntries(root, set), nil
}

func sortEntries(root string, set map[string]bool) []entry {
	out := make([]entry, 0, len(set))
	for rel := range set {
		out = append(out, entry{rel: rel, full: filepath.Join(root, filepath.FromSlash(rel))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].full < out[j].full })
	return out
}

func orDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// FilesHash is the SDK's calculateFilesHash for `COPY src dest` from
// contextDir with the ignore patterns (ReadDockerignore's, typically):
// sha256 over "COPY src dest" and then, for each file in order, its
// relative posix path, decimal st_mode and size, and its bytes (a
// symlink's target instead, for symlinks, which are not followed).
func FilesHash(contextDir, src, dest string, ignore []string) (string, error) {
	root, files, err := collect(contextDir, src, ignore)
	if err != nil {
		return "", err
	}
	defer root.Close()
	h := sha256.New()
	io.WriteString(h, "COPY "+src+" "+dest)
	for _, f := range files {
		if err := hashEntry(h, root, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashEntry adds one file of root: path, mode, size, then content or link
// target.
func hashEntry(h hash.Hash, root *os.Root, f entry) error {
	io.WriteString(h, f.rel)
	fi, err := root.Lstat(orDot(f.rel))
	if err != nil {
		return fmt.Errorf("hashing %s: %w", f.rel, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := root.Readlink(f.rel)
		if err != nil {
			return fmt.Errorf("hashing %s: %w", f.rel, err)
		}
		writeStat(h, fi)
		io.WriteString(h, target)
		return nil
	}
	writeStat(h, fi)
	if fi.Mode().IsRegular() {
		return hashContent(h, root, f)
	}
	return nil
}

// writeStat adds node's stats.mode (the raw st_mode) and stats.size.
func writeStat(h hash.Hash, fi os.FileInfo) {
	mode := uint64(fi.Mode().Perm())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		mode = uint64(st.Mode)
	}
	io.WriteString(h, strconv.FormatUint(mode, 10))
	io.WriteString(h, strconv.FormatInt(fi.Size(), 10))
}

func hashContent(h hash.Hash, root *os.Root, f entry) error {
	r, err := root.Open(f.rel)
	if err != nil {
		return fmt.Errorf("hashing %s: %w", f.rel, err)
	}
	defer r.Close()
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("hashing %s: %w", f.rel, err)
	}
	return nil
}

// HashFiles sets FilesHash on every COPY step of s, for the files under
// contextDir.
func (s *Spec) HashFiles(contextDir string, ignore []string) error {
	for i, st := range s.Steps {
		if st.Type != "COPY" || len(st.Args) < 2 {
			continue
		}
		h, err := FilesHash(contextDir, st.Args[0], st.Args[1], ignore)
		if err != nil {
			return fmt.Errorf("COPY %s %s: %w", st.Args[0], st.Args[1], err)
		}
		s.Steps[i].FilesHash = h
	}
	return nil
}
