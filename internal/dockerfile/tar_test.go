package dockerfile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTarContext checks that the archive holds exactly the hashed files,
// under their relative names, symlinks as symlinks.
func TestTarContext(t *testing.T) {
	root := makeTree(t)
	var buf bytes.Buffer
	must(t, TarContext(&buf, root, "dir", nil))
	zr, err := gzip.NewReader(&buf)
	must(t, err)
	tr := tar.NewReader(zr)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		data, _ := io.ReadAll(tr)
		got[h.Name] = string(data) + h.Linkname
	}
	want := map[string]string{
		"dir/": "", "dir/.git/": "", "dir/.git/HEAD": "ref", "dir/b.txt": "bravo",
		"dir/link-other": "../other", "dir/link-other/d.txt": "delta", "dir/link-other/deep/": "",
		"dir/sub/": "", "dir/sub/c.py": "print(1)\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
}

func TestFilesHashNoFiles(t *testing.T) {
	if _, err := FilesHash(t.TempDir(), "missing.txt", "/x", nil); err == nil {
		t.Fatal("want an error for a source that matches nothing")
	}
}

// TestContextSymlinkOut: a symlink of the context that leads out of it (a
// cloned repository may hold `keys -> /home/me/.ssh`, absolute or made of
// ..) never takes a COPY's files outside the context: a source through it
// is an error for the hash and the archive, and nothing of the file is
// read. The symlink itself is still copied as a symlink. Before, `COPY
// keys/id_rsa /x` (or keys/*, keys/**) uploaded the operator's key into the
// build, where a later RUN could send it anywhere.
func TestContextSymlinkOut(t *testing.T) {
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "id_rsa"), []byte("PRIVATE KEY"), 0o600))
	root := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(root, "keys")))
	rel, err := filepath.Rel(root, outside)
	must(t, err)
	must(t, os.Symlink(rel, filepath.Join(root, "up")))
	for _, src := range []string{"keys/id_rsa", "keys/*", "keys/**", "up/id_rsa", "up/**"} {
		if _, err := FilesHash(root, src, "/x", nil); err == nil {
			t.Errorf("FilesHash of %s: no error, want one (it leads out of the context)", src)
		}
		var buf bytes.Buffer
		if err := TarContext(&buf, root, src, nil); err == nil {
			t.Errorf("TarContext of %s: no error, want one (it leads out of the context)", src)
		}
		if got := archived(t, buf.Bytes()); strings.Contains(got, "PRIVATE KEY") {
			t.Errorf("TarContext of %s archived the file outside the context", src)
		}
	}
	var buf bytes.Buffer
	must(t, TarContext(&buf, root, "keys", nil))
	if got := archived(t, buf.Bytes()); got != "keys -> "+outside+"\n" {
		t.Errorf("COPY keys archived %q, want the symlink alone", got)
	}
}

// archived lists a (possibly cut short) gzipped tar: "name -> link" and
// each file's content, one entry a line.
func archived(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	tr := tar.NewReader(zr)
	var out strings.Builder
	for {
		h, err := tr.Next()
		if err != nil {
			return out.String()
		}
		data, _ := io.ReadAll(tr)
		fmt.Fprintf(&out, "%s -> %s%s\n", h.Name, h.Linkname, data)
	}
}
