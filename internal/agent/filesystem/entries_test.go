package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"golang.org/x/sys/unix"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
)

func TestStat(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.home, "a.txt")
	must(t, os.WriteFile(file, []byte("hello"), 0o644))
	must(t, os.Chown(file, 1000, 1000))
	must(t, unix.Setxattr(file, "user.e2b.k", []byte("v"), 0))
	must(t, os.Symlink(file, filepath.Join(e.home, "link")))
	must(t, os.Symlink("/", filepath.Join(e.home, "root")))
	home := e.home
	tests := []struct {
		name, path string
		code       connect.Code
		want       *fspb.EntryInfo
	}{
		{"relative file", "a.txt", 0, &fspb.EntryInfo{Name: "a.txt", Type: fspb.FileType_FILE_TYPE_FILE, Path: file, Size: 5, Mode: 0o644, Permissions: "-rw-r--r--", Owner: "user", Group: "user"}},
		{"tilde", "~/a.txt", 0, &fspb.EntryInfo{Name: "a.txt", Path: file}},
		{"absolute", file, 0, &fspb.EntryInfo{Name: "a.txt", Path: file}},
		{"dotdot", "x/../a.txt", 0, &fspb.EntryInfo{Name: "a.txt", Path: file}},
		{"home", "~", 0, &fspb.EntryInfo{Name: "user", Type: fspb.FileType_FILE_TYPE_DIRECTORY, Mode: 0o755, Permissions: "drwxr-xr-x"}},
		{"symlink", "link", 0, &fspb.EntryInfo{Name: "link", Type: fspb.FileType_FILE_TYPE_FILE, Mode: 0o644, Permissions: "Lrwxrwxrwx"}},
		{"symlink to a directory", "root", 0, &fspb.EntryInfo{Name: "root", Type: fspb.FileType_FILE_TYPE_DIRECTORY, Permissions: "Lrwxrwxrwx"}},
		{"symlink to root", "root/etc", 0, &fspb.EntryInfo{Name: "etc", Type: fspb.FileType_FILE_TYPE_DIRECTORY, Owner: "root"}},
		{"missing", "nope", connect.CodeNotFound, nil},
		{"through a file", "a.txt/x", connect.CodeNotFound, nil},
		{"empty is the home", "", 0, &fspb.EntryInfo{Name: "user", Path: home, Type: fspb.FileType_FILE_TYPE_DIRECTORY}},
		{"nul", "a\x00b", connect.CodeInvalidArgument, nil},
		{"long", strings.Repeat("a", 5000), connect.CodeInvalidArgument, nil},
		{"long component", strings.Repeat("a", 300), connect.CodeInvalidArgument, nil},
		{"other home", "~root/x", connect.CodeInvalidArgument, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.client.Stat(context.Background(), as("", &fspb.StatRequest{Path: tt.path}))
			if errCode(err) != tt.code {
				t.Fatalf("err = %v, want code %v", err, tt.code)
			}
			if tt.want != nil {
				checkEntry(t, res.Msg.Entry, tt.want)
			}
		})
	}
}

// checkEntry compares the fields of want that are set.
func checkEntry(t *testing.T, got, want *fspb.EntryInfo) {
	t.Helper()
	if got.Name != want.Name || (want.Path != "" && got.Path != want.Path) ||
		(want.Type != 0 && got.Type != want.Type) || (want.Mode != 0 && got.Mode != want.Mode) ||
		(want.Permissions != "" && got.Permissions != want.Permissions) ||
		(want.Owner != "" && got.Owner != want.Owner) || (want.Group != "" && got.Group != want.Group) ||
		(want.Size != 0 && got.Size != want.Size) {
		t.Fatalf("entry = %v, want %v", got, want)
	}
	if got.ModifiedTime == nil {
		t.Fatalf("no modified time in %v", got)
	}
}

func TestStatMetadataAndSymlinkTarget(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.home, "a.txt")
	must(t, os.WriteFile(file, nil, 0o644))
	must(t, unix.Setxattr(file, "user.e2b.owner", []byte("me"), 0))
	must(t, unix.Setxattr(file, "user.other", []byte("hidden"), 0))
	must(t, os.Symlink("a.txt", filepath.Join(e.home, "link")))
	must(t, os.Symlink("gone", filepath.Join(e.home, "dangling")))
	res, err := e.client.Stat(context.Background(), as("", &fspb.StatRequest{Path: "a.txt"}))
	must(t, err)
	if md := res.Msg.Entry.Metadata; len(md) != 1 || md["owner"] != "me" {
		t.Fatalf("metadata = %v", md)
	}
	res, err = e.client.Stat(context.Background(), as("", &fspb.StatRequest{Path: "link"}))
	must(t, err)
	if res.Msg.Entry.GetSymlinkTarget() != file {
		t.Fatalf("target = %q", res.Msg.Entry.GetSymlinkTarget())
	}
	res, err = e.client.Stat(context.Background(), as("", &fspb.StatRequest{Path: "dangling"}))
	must(t, err)
	if en := res.Msg.Entry; en.GetSymlinkTarget() != "gone" || en.Type != fspb.FileType_FILE_TYPE_UNSPECIFIED || en.Mode != 0 {
		t.Fatalf("dangling = %v", en)
	}
	must(t, os.Symlink("loop", filepath.Join(e.home, "loop")))
	res, err = e.client.Stat(context.Background(), as("", &fspb.StatRequest{Path: "loop"}))
	must(t, err)
	if en := res.Msg.Entry; en.Type != fspb.FileType_FILE_TYPE_UNSPECIFIED || en.Mode != 0 {
		t.Fatalf("loop = %v", en)
	}
}

// TestListSymlinks: a listing reports a symlink as envd does, by its
// target's type, with the resolved target; it does not descend into a
// symlinked directory (the tree below belongs to the target).
func TestListSymlinks(t *testing.T) {
	e := newEnv(t)
	d := filepath.Join(e.home, "d")
	must(t, os.MkdirAll(filepath.Join(d, "real", "inner"), 0o755))
	must(t, os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600))
	must(t, os.Symlink("f", filepath.Join(d, "lf")))
	must(t, os.Symlink("real", filepath.Join(d, "ld")))
	res, err := e.client.ListDir(context.Background(), as("", &fspb.ListDirRequest{Path: "d", Depth: 3}))
	must(t, err)
	got := map[string]*fspb.EntryInfo{}
	for _, en := range res.Msg.Entries {
		got[strings.TrimPrefix(en.Path, d+"/")] = en
	}
	if len(got) != 5 || got["ld/inner"] != nil {
		t.Fatalf("entries %v, want f, lf, ld, real, real/inner", got)
	}
	if lf := got["lf"]; lf.Type != fspb.FileType_FILE_TYPE_FILE || lf.Mode != 0o600 || lf.GetSymlinkTarget() != filepath.Join(d, "f") {
		t.Fatalf("lf = %v", lf)
	}
	if ld := got["ld"]; ld.Type != fspb.FileType_FILE_TYPE_DIRECTORY || ld.GetSymlinkTarget() != filepath.Join(d, "real") {
		t.Fatalf("ld = %v", ld)
	}
}

func TestUsers(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		user string
		code connect.Code
		home string
	}{
		{"", 0, "user"},
		{"user", 0, "user"},
		{"root", 0, "root"},
		{"nobody", connect.CodeUnauthenticated, ""},
	}
	must(t, os.MkdirAll("/root", 0o700))
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			res, err := e.client.Stat(context.Background(), as(tt.user, &fspb.StatRequest{Path: "~"}))
			if errCode(err) != tt.code {
				t.Fatalf("err = %v, want %v", err, tt.code)
			}
			if err == nil && res.Msg.Entry.Name != tt.home {
				t.Fatalf("home = %q", res.Msg.Entry.Name)
			}
		})
	}
}
