package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"
	"golang.org/x/sys/unix"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
)

func TestMakeDir(t *testing.T) {
	e := newEnv(t)
	must(t, os.WriteFile(filepath.Join(e.home, "file"), nil, 0o644))
	pub := filepath.Join(e.dir, "pub") // outside the home, writable by all as /tmp is
	must(t, os.Mkdir(pub, 0o777))
	must(t, os.Chmod(pub, 0o1777))
	outside := filepath.Join(pub, "outside", "a", "b")
	tests := []struct {
		name, path string
		code       connect.Code
		check      string // a directory that must now be user-owned 0755
	}{
		{"nested in home", "x/y/z", 0, filepath.Join(e.home, "x", "y")},
		{"outside home", outside, 0, filepath.Join(pub, "outside")},
		{"where only root may write", filepath.Join(e.dir, "rootonly"), connect.CodePermissionDenied, ""},
		{"exists", "x", connect.CodeAlreadyExists, ""},
		{"is a file", "file", connect.CodeInvalidArgument, ""},
		{"under a file", "file/sub", connect.CodeInvalidArgument, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.client.MakeDir(context.Background(), as("", &fspb.MakeDirRequest{Path: tt.path}))
			if errCode(err) != tt.code {
				t.Fatalf("err = %v, want %v", err, tt.code)
			}
			if tt.check == "" {
				return
			}
			if res.Msg.Entry.Type != fspb.FileType_FILE_TYPE_DIRECTORY || res.Msg.Entry.Owner != "user" {
				t.Fatalf("entry = %v", res.Msg.Entry)
			}
			if uid, gid, mode := owner(t, tt.check); uid != 1000 || gid != 1000 || mode != os.ModeDir|0o755 {
				t.Fatalf("%s: %d:%d %v", tt.check, uid, gid, mode)
			}
		})
	}
	if uid, _, _ := owner(t, e.dir); uid != 0 {
		t.Fatalf("existing parent was chowned")
	}
}

func TestListDir(t *testing.T) {
	e := newEnv(t)
	for _, d := range []string{"t/sub1/sub1_1", "t/sub1/sub1_2", "t/sub2/sub2_1"} {
		must(t, os.MkdirAll(filepath.Join(e.home, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(e.home, "t", "file1.txt"), []byte("x"), 0o644))
	must(t, os.Symlink(filepath.Join(e.home, "t"), filepath.Join(e.home, "tl")))
	tests := []struct {
		name, path string
		depth      uint32
		code       connect.Code
		want       []string
	}{
		{"default depth", "t", 0, 0, []string{"t/file1.txt", "t/sub1", "t/sub2"}},
		{"depth 2", "t", 2, 0, []string{"t/file1.txt", "t/sub1", "t/sub1/sub1_1", "t/sub1/sub1_2", "t/sub2", "t/sub2/sub2_1"}},
		{"depth 9", "t", 9, 0, []string{"t/file1.txt", "t/sub1", "t/sub1/sub1_1", "t/sub1/sub1_2", "t/sub2", "t/sub2/sub2_1"}},
		{"symlinked root", "tl", 1, 0, []string{"tl/file1.txt", "tl/sub1", "tl/sub2"}},
		{"empty dir", "t/sub2/sub2_1", 1, 0, nil},
		{"a file", "t/file1.txt", 1, connect.CodeInvalidArgument, nil},
		{"missing", "nope", 1, connect.CodeNotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.client.ListDir(context.Background(), as("", &fspb.ListDirRequest{Path: tt.path, Depth: tt.depth}))
			if errCode(err) != tt.code {
				t.Fatalf("err = %v, want %v", err, tt.code)
			}
			if err != nil {
				return
			}
			var got []string
			for _, en := range res.Msg.Entries {
				rel, _ := filepath.Rel(e.home, en.Path)
				got = append(got, rel)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestMove(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(e.home, "a.txt")
	must(t, os.WriteFile(src, []byte("data"), 0o644))
	must(t, unix.Setxattr(src, "user.e2b.k", []byte("v"), 0))
	res, err := e.client.Move(context.Background(), as("", &fspb.MoveRequest{Source: "a.txt", Destination: "new/dir/b.txt"}))
	must(t, err)
	if en := res.Msg.Entry; en.Path != filepath.Join(e.home, "new/dir/b.txt") || en.Metadata["k"] != "v" || en.Size != 4 {
		t.Fatalf("entry = %v", en)
	}
	if uid, _, _ := owner(t, filepath.Join(e.home, "new")); uid != 1000 {
		t.Fatalf("new parent not owned by user")
	}
	tests := []struct {
		name, src, dst string
		code           connect.Code
	}{
		{"missing source", "a.txt", "c.txt", connect.CodeNotFound},
		{"empty destination", "new", "", connect.CodeInvalidArgument},
		{"into itself", "new", "new/dir/inner", connect.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.client.Move(context.Background(), as("", &fspb.MoveRequest{Source: tt.src, Destination: tt.dst}))
			if errCode(err) != tt.code {
				t.Fatalf("err = %v, want %v", err, tt.code)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	e := newEnv(t)
	must(t, os.MkdirAll(filepath.Join(e.home, "tree/a/b"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.home, "f"), nil, 0o644))
	e.ownHome(t)
	target := filepath.Join(e.dir, "keep")
	must(t, os.WriteFile(target, nil, 0o644))
	must(t, os.Symlink(target, filepath.Join(e.home, "link")))
	tests := []struct {
		name, path string
		code       connect.Code
	}{
		{"file", "f", 0},
		{"tree", "tree", 0},
		{"symlink only", "link", 0},
		{"missing (as envd: success)", "f", 0},
		{"missing below a missing directory", "no/such/dir/f", 0},
		{"root", "/", connect.CodeInvalidArgument},
		{"root via dotdot", "../../../../../../..", connect.CodeInvalidArgument},
		{"empty", "", connect.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.client.Remove(context.Background(), as("", &fspb.RemoveRequest{Path: tt.path}))
			if errCode(err) != tt.code {
				t.Fatalf("err = %v, want %v", err, tt.code)
			}
		})
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("symlink target removed: %v", err)
	}
}
