package files

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// env is a temp tree with its own passwd/group ("user" is uid 1000 with home
// <tmp>/home/user) and the handler on a real HTTP server.
type env struct {
	dir, home string
	state     *identity.State
	url       string
}

func newEnv(t testing.TB) *env {
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
	srv := httptest.NewServer(NewHandler(st, files))
	t.Cleanup(srv.Close)
	return &env{dir: dir, home: home, state: st, url: srv.URL}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// do sends a request and returns status, headers and body.
func do(t testing.TB, method, url string, hdr map[string]string, body io.Reader) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	must(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	must(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	must(t, err)
	return res.StatusCode, res.Header, b
}

func ownerOf(t testing.TB, p string) (uint32, os.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	must(t, err)
	return fi.Sys().(*syscall.Stat_t).Uid, fi.Mode()
}

func reader(s string) io.Reader { return bytes.NewBufferString(s) }

// ownHome gives everything under the user's home to the user, as if the user
// had made it (the agent acts as the user, and root's fixtures are not its).
func (e *env) ownHome(t testing.TB) {
	t.Helper()
	must(t, filepath.WalkDir(e.home, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 1000, 1000)
	}))
}
