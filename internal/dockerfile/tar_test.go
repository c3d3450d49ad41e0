package dockerfile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
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
