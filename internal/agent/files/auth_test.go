package files

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/identity"
	"github.com/sbx-dev/sbx/internal/envdsig"
)

func TestSignedURLs(t *testing.T) {
	e := newEnv(t)
	tok := "secret-token"
	e.state.Apply(identity.Init{AccessToken: &tok})
	must(t, os.WriteFile(filepath.Join(e.home, "a.txt"), []byte("hi"), 0o644))
	future := time.Now().Add(time.Hour).Unix()
	past := time.Now().Add(-time.Minute).Unix()
	q := func(path, op, user string, exp int64, sig string) string {
		v := url.Values{"path": {path}}
		if user != "" {
			v.Set("username", user)
		}
		if sig == "" {
			sig = envdsig.Sign(path, op, user, tok, exp)
		}
		v.Set("signature", sig)
		if exp != 0 {
			v.Set("signature_expiration", strconv.FormatInt(exp, 10))
		}
		return v.Encode()
	}
	tests := []struct {
		name, method, query string
		hdr                 map[string]string
		status              int
	}{
		{"read signed", "GET", q("a.txt", OpRead, "", 0, ""), nil, 200},
		{"read signed user", "GET", q("a.txt", OpRead, "user", 0, ""), nil, 200},
		{"read signed expiry", "GET", q("a.txt", OpRead, "", future, ""), nil, 200},
		{"write signed", "POST", q("w.txt", OpWrite, "", future, ""), map[string]string{"Content-Type": "application/octet-stream"}, 200},
		{"expired", "GET", q("a.txt", OpRead, "", past, ""), nil, 401},
		{"tampered", "GET", q("a.txt", OpRead, "", 0, "v1_AAAA"), nil, 401},
		{"wrong op", "GET", q("a.txt", OpWrite, "", 0, ""), nil, 401},
		{"wrong user", "GET", url.Values{"path": {"a.txt"}, "username": {"root"}, "signature": {envdsig.Sign("a.txt", OpRead, "user", tok, 0)}}.Encode(), nil, 401},
		{"other path", "GET", url.Values{"path": {"/etc/hostname"}, "signature": {envdsig.Sign("a.txt", OpRead, "", tok, 0)}}.Encode(), nil, 401},
		{"expiry moved", "GET", url.Values{"path": {"a.txt"}, "signature": {envdsig.Sign("a.txt", OpRead, "", tok, past)}, "signature_expiration": {strconv.FormatInt(future, 10)}}.Encode(), nil, 401},
		{"bad expiry", "GET", url.Values{"path": {"a.txt"}, "signature": {"v1_x"}, "signature_expiration": {"soon"}}.Encode(), nil, 400},
		{"no signature", "GET", "path=a.txt", nil, 401},
		{"token header", "GET", "path=a.txt", map[string]string{"X-Access-Token": tok}, 200},
		{"wrong token header", "GET", q("a.txt", OpRead, "", 0, ""), map[string]string{"X-Access-Token": "nope"}, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := do(t, tt.method, e.url+"/files?"+tt.query, tt.hdr, reader("x"))
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, body, tt.status)
			}
		})
	}
	status, _, body := do(t, "GET", e.url+"/files?"+q("a.txt", OpRead, "", past, ""), nil, nil)
	if status != 401 || !contains(body, "signature is already expired") {
		t.Fatalf("expired: %d %s", status, body)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

// TestSignedURLUserIsSigned: a signed URL acts as the user its signature
// covers (its username, or the default user when it has none), never as a
// user named by an Authorization header the holder adds: a URL signed for
// the default user must not read root's files or write as root (through a
// symlink the sandbox's code planted there, say).
func TestSignedURLUserIsSigned(t *testing.T) {
	e := newEnv(t)
	tok := "secret-token"
	e.state.Apply(identity.Init{AccessToken: &tok})
	secret := filepath.Join(e.dir, "secret")
	must(t, os.WriteFile(secret, []byte("root only"), 0o600))
	link := filepath.Join(e.home, "report.txt")
	must(t, os.Symlink(secret, link))
	root := map[string]string{"Authorization": "Basic cm9vdDo="} // root:
	signed := func(path, op, user string) string {
		v := url.Values{"path": {path}, "signature": {envdsig.Sign(path, op, user, tok, 0)}}
		if user != "" {
			v.Set("username", user)
		}
		return e.url + "/files?" + v.Encode()
	}
	for _, user := range []string{"", "user"} {
		if status, _, body := do(t, "GET", signed(link, OpRead, user), root, nil); status == 200 {
			t.Errorf("read signed for %q with Basic root: 200 %q", user, body)
		}
		p := filepath.Join(e.home, "w-"+user+".txt")
		hdr := map[string]string{"Authorization": root["Authorization"], "Content-Type": "application/octet-stream"}
		if status, _, body := do(t, "POST", signed(p, OpWrite, user), hdr, reader("x")); status != 200 {
			t.Fatalf("write signed for %q: %d %s", user, status, body)
		}
		var st syscall.Stat_t
		must(t, syscall.Stat(p, &st))
		if st.Uid != 1000 {
			t.Errorf("write signed for %q with Basic root: owned by %d, want 1000", user, st.Uid)
		}
	}
	// The signed root stays root.
	if status, _, body := do(t, "GET", signed(link, OpRead, "root"), nil, nil); status != 200 || string(body) != "root only" {
		t.Errorf("read signed for root: %d %q", status, body)
	}
}
