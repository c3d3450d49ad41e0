package filesystem

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"connectrpc.com/connect"

	"github.com/sbx-dev/sbx/api/proto/envd/filesystem/filesystemconnect"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// env is a temp tree with its own passwd/group: root, and "user" (uid 1000,
// home <tmp>/home/user), served over real HTTP.
type env struct {
	dir, home string
	client    filesystemconnect.FilesystemClient
	state     *identity.State
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown)")
	}
	dir := t.TempDir()
	// The agent acts as the user (identity.As): "user" must be able to reach its home.
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	must(t, os.Chmod(dir, 0o755))
	home := filepath.Join(dir, "home", "user")
	must(t, os.MkdirAll(home, 0o755))
	must(t, os.Chown(home, 1000, 1000))
	files := identity.Files{Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group")}
	must(t, os.WriteFile(files.Passwd, []byte("root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::"+home+":/bin/sh\n"), 0o644))
	must(t, os.WriteFile(files.Group, []byte("root:x:0:\nuser:x:1000:\n"), 0o644))
	st := identity.NewState()
	svc := New(st, files)
	t.Cleanup(svc.Close)
	path, h := filesystemconnect.NewFilesystemHandler(svc)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.Start()
	t.Cleanup(srv.Close)
	return &env{dir: dir, home: home, client: filesystemconnect.NewFilesystemClient(srv.Client(), srv.URL, connect.WithProtoJSON()), state: st}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// as sets the Basic auth user on a request, as the SDK does.
func as[T any](user string, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	if user != "" {
		req.Header().Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":")))
	}
	return req
}

func errCode(err error) connect.Code {
	if err == nil {
		return 0
	}
	return connect.CodeOf(err)
}

func owner(t *testing.T, p string) (uint32, uint32, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, fi.Mode()
}

// ownHome gives everything under the user's home to the user, as if the user
// had made it (the agent acts as the user, and root's fixtures are not its).
func (e *env) ownHome(t *testing.T) {
	t.Helper()
	must(t, filepath.WalkDir(e.home, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 1000, 1000)
	}))
}
