package dockerfile

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// makeTree builds a context with the cases the SDK's glob walk treats
// specially: dotfiles, symlinks to files and directories (at the top and
// inside a directory), a broken symlink, an empty directory, modes.
func makeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"a.txt": "alpha\n", ".hidden": "h", "my file.txt": "spaces", "run.sh": "#!/bin/sh\n",
		"dir/b.txt": "bravo", "dir/sub/c.py": "print(1)\n", "dir/.git/HEAD": "ref",
		"node_modules/m/index.js": "x", "other/d.txt": "delta", "other/deep/e.txt": "echo",
	}
	for name, data := range files {
		p := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(data), 0o644))
	}
	must(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	must(t, os.Mkdir(filepath.Join(root, "empty"), 0o700))
	for link, target := range map[string]string{
		"link-file": "a.txt", "link-dir": "dir", "broken": "nowhere", "dir/link-other": "../other",
	} {
		must(t, os.Symlink(target, filepath.Join(root, link)))
	}
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var hashCases = []struct {
	src    string
	ignore []string
}{
	{".", nil},
	{".", []string{"node_modules"}},
	{".", []string{"node_modules/**", "**/.git/**"}},
	{".", []string{"**/*.py", "*.txt"}},
	{".", []string{"dir/sub/", "/abs/**", "!a.txt"}},
	{"dir", nil},
	{"dir/", nil},
	{"./dir", []string{"dir/link-other"}},
	{"dir/*.txt", nil},
	{"*.txt", nil},
	{"**/*.py", nil},
	{"dir/**", nil},
	{"link-dir", nil},
	{"link-dir/", nil},
	{"link-file", nil},
	{"a.txt", nil},
	{"{a.txt,other}", nil},
	{"d?r", nil},
	{"[ad]*", nil},
	{"[!ad]*.sh", nil},
	{"empty", nil},
	{"other", []string{"other/deep/**"}},
}

// TestFilesHashMatchesSDK compares FilesHash with the SDK's own functions
// (testdata/fileshash.mjs) run by node on the same tree.
func TestFilesHashMatchesSDK(t *testing.T) {
	node, nodeModules := sdkNode(t)
	root := makeTree(t)
	for _, tc := range hashCases {
		t.Run(tc.src+" "+strings.Join(tc.ignore, ","), func(t *testing.T) {
			want := runSDKHash(t, node, nodeModules, root, tc.src, tc.ignore)
			r, files, err := collect(root, tc.src, tc.ignore)
			must(t, err)
			r.Close()
			var got []string
			for _, f := range files {
				got = append(got, f.rel)
			}
			if diff := cmp.Diff(want.Files, got); diff != "" {
				t.Errorf("files (-sdk +go):\n%s", diff)
			}
			hash, err := FilesHash(root, tc.src, "/app/", tc.ignore)
			must(t, err)
			if hash != want.Hash {
				t.Errorf("hash %s, sdk %s", hash, want.Hash)
			}
		})
	}
}

type sdkHash struct {
	Hash  string   `json:"hash"`
	Files []string `json:"files"`
}

func runSDKHash(t *testing.T, node, nodeModules, root, src string, ignore []string) sdkHash {
	t.Helper()
	ign, _ := json.Marshal(append([]string{}, ignore...))
	out, err := exec.Command(node, "testdata/fileshash.mjs", nodeModules, root, src, "/app/", string(ign)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var h sdkHash
	must(t, json.Unmarshal(out, &h))
	return h
}

// sdkNode finds node and the e2b SDK's node_modules (test/e2e, installed
// by npm ci). Without them the test skips, except in CI.
func sdkNode(t *testing.T) (node, nodeModules string) {
	node, err := exec.LookPath("node")
	ci := os.Getenv("CI") == "true"
	if err != nil {
		if ci {
			t.Fatal("node not found (CI=true)")
		}
		t.Skip("node not found")
	}
	nodeModules, _ = filepath.Abs("../../test/e2e/node_modules")
	if _, err := os.Stat(filepath.Join(nodeModules, "glob", "package.json")); err != nil {
		if ci {
			t.Fatalf("the SDK's node_modules are missing (run npm ci in test/e2e): %v", err)
		}
		t.Skip("test/e2e/node_modules missing: run npm ci in test/e2e")
	}
	return node, nodeModules
}
