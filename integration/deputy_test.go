package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/envdsig"
)

// TestFileAPIConfusedDeputy: code running as "user" plants symlinks (and a
// hard link: made by root where protected_hardlinks stops user) to /etc/passwd, /etc/shadow, /root
// and /etc, then the tenant uploads, downloads, renames, removes, makes
// directories, lists and watches through them as "user": every one fails
// with a permission error and leaves the targets as they were, because the
// agent does file work with the caller's credentials. The same requests as
// root succeed. On runsc (per-thread credentials in the Sentry), crun and
// runc.
func TestFileAPIConfusedDeputy(t *testing.T) {
	for _, rt := range []string{"runsc", "crun", "runc"} {
		t.Run(rt, func(t *testing.T) {
			sb := startDaemon(t, rt, "").create(nil)
			deputyAttacks(t, sb)
		})
	}
}

// deputyCase is one request through a planted link and what it must give.
type deputyCase struct {
	name string
	do   func(user string) int // returns the HTTP status (Connect unary calls map to it)
}

func deputyAttacks(t *testing.T, sb *sandbox) {
	sb.run("root", "echo root-only > /root/target && chmod 600 /root/target", 20*time.Second)
	plant := `cd ~ && ln -s /etc/passwd pw && ln -s /etc/shadow sh && ln -s /root rootdir && ln -s /etc etcdir && ln -s /root/target tgt && echo planted; ln /etc/passwd hard 2>/dev/null && echo hardlinked; true`
	out, _ := sb.run("user", plant, 20*time.Second)
	if !strings.Contains(out, "planted") {
		t.Fatalf("plant: %q", out)
	}
	hard := strings.Contains(out, "hardlinked")
	if !hard { // protected_hardlinks stops user: make the link as a kernel without it would let user
		sb.run("root", "ln /etc/passwd /home/user/hard", 20*time.Second)
	}
	before := sb.fingerprint()
	cases := []deputyCase{
		{"upload through a symlink to /etc/passwd", func(u string) int { return sb.uploadAs(u, "/home/user/pw", "pwned\n") }},
		{"upload through a symlink to /root/target", func(u string) int { return sb.uploadAs(u, "/home/user/tgt", "pwned\n") }},
		{"upload into /root through a symlinked dir", func(u string) int { return sb.uploadAs(u, "/home/user/rootdir/new", "pwned\n") }},
		{"download /etc/shadow through a symlink", func(u string) int { return sb.downloadAs(u, "/home/user/sh") }},
		{"download from /root through a symlinked dir", func(u string) int { return sb.downloadAs(u, "/home/user/rootdir/target") }},
		{"rename out of /root", func(u string) int {
			return sb.fsCall(u, "Move", map[string]any{"source": "/home/user/rootdir/target", "destination": "/home/user/stolen"})
		}},
		{"rename over /etc/passwd", func(u string) int {
			sb.uploadAs("user", "/home/user/mine", "mine\n")
			return sb.fsCall(u, "Move", map[string]any{"source": "/home/user/mine", "destination": "/home/user/etcdir/passwd"})
		}},
		{"remove in /root", func(u string) int { return sb.fsCall(u, "Remove", map[string]any{"path": "/home/user/rootdir/target"}) }},
		{"remove /etc/passwd", func(u string) int { return sb.fsCall(u, "Remove", map[string]any{"path": "/home/user/etcdir/passwd"}) }},
		{"make-dir in /root", func(u string) int { return sb.fsCall(u, "MakeDir", map[string]any{"path": "/home/user/rootdir/d"}) }},
		{"make-dir in /etc", func(u string) int { return sb.fsCall(u, "MakeDir", map[string]any{"path": "/home/user/etcdir/d"}) }},
		{"list /root", func(u string) int { return sb.fsCall(u, "ListDir", map[string]any{"path": "/home/user/rootdir"}) }},
		{"stat in /root", func(u string) int { return sb.fsCall(u, "Stat", map[string]any{"path": "/home/user/rootdir/target"}) }},
		{"watch /root", func(u string) int { return sb.fsCall(u, "CreateWatcher", map[string]any{"path": "/home/user/rootdir"}) }},
	}
	cases = append(cases, deputyCase{"upload through a hard link to /etc/passwd", func(u string) int { return sb.uploadAs(u, "/home/user/hard", "pwned\n") }})
	for _, c := range cases {
		if code := c.do("user"); code != http.StatusForbidden {
			t.Errorf("%s as user: %d, want 403 (permission denied)", c.name, code)
		}
	}
	if after := sb.fingerprint(); after != before {
		t.Fatalf("targets changed by requests as user:\nbefore %s\nafter  %s", before, after)
	}
	t.Logf("%d attacks refused as user (hard link planted by user: %v, else by root)", len(cases), hard)
	signedAsRoot(t, sb)
	asRoot(t, sb)
}

// signedAsRoot: a signed URL made for the default user (the SDK's
// downloadUrl/uploadUrl without a user: no username in the URL or the
// signature), used without routing headers as a browser would, with an
// Authorization header naming root added by its holder, still acts as
// user: no read of /etc/shadow, no write to /etc/passwd through the links.
func signedAsRoot(t *testing.T, sb *sandbox) {
	before := sb.fingerprint()
	for _, c := range []struct{ method, path, op string }{
		{"GET", "/home/user/sh", "read"}, {"POST", "/home/user/pw", "write"},
	} {
		q := url.Values{"path": {c.path}, "signature": {envdsig.Sign(c.path, c.op, "", sb.Token, 0)}}
		req, _ := http.NewRequest(c.method, sb.d.url+"/files?"+q.Encode(), strings.NewReader("pwned\n"))
		req.Header.Set("Content-Type", "application/octet-stream")
		req.SetBasicAuth("root", "")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("signed %s of %s with Basic root: %d, want 403", c.op, c.path, resp.StatusCode)
		}
	}
	if after := sb.fingerprint(); after != before {
		t.Fatalf("targets changed by signed requests:\nbefore %s\nafter  %s", before, after)
	}
}

// asRoot: root keeps every right through the same links.
func asRoot(t *testing.T, sb *sandbox) {
	for name, code := range map[string]int{
		"download /etc/shadow": sb.downloadAs("root", "/home/user/sh"),
		"list /root":           sb.fsCall("root", "ListDir", map[string]any{"path": "/home/user/rootdir"}),
		"make-dir in /root":    sb.fsCall("root", "MakeDir", map[string]any{"path": "/home/user/rootdir/d"}),
		"watch /root":          sb.fsCall("root", "CreateWatcher", map[string]any{"path": "/home/user/rootdir"}),
		"upload /root/target":  sb.uploadAs("root", "/home/user/tgt", "by root\n"),
		"rename in /root":      sb.fsCall("root", "Move", map[string]any{"source": "/root/target", "destination": "/home/user/rootdir/moved"}),
		"remove in /root":      sb.fsCall("root", "Remove", map[string]any{"path": "/home/user/rootdir/moved"}),
	} {
		if code != 200 {
			t.Errorf("%s as root: %d, want 200", name, code)
		}
	}
	if out, _ := sb.run("root", "ls /root; test -d /root/d && echo dir", 20*time.Second); strings.Contains(out, "moved") || !strings.Contains(out, "dir") {
		t.Errorf("root's requests did not land: %q", out)
	}
}

// fingerprint hashes what the attacks aim at, as root in the sandbox.
func (s *sandbox) fingerprint() string {
	out, _ := s.run("root", "sha256sum /etc/passwd /etc/shadow /root/target; ls -la /root /etc | sha256sum", 20*time.Second)
	return out
}

func (s *sandbox) uploadAs(user, path, body string) int {
	req, _ := http.NewRequest("POST", s.d.url+"/files?"+url.Values{"path": {path}, "username": {user}}.Encode(), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	code, body := s.filesDo(req)
	if code == 500 {
		s.d.t.Logf("%s %s as %s: %s", req.Method, req.URL, user, body)
	}
	return code
}

func (s *sandbox) downloadAs(user, path string) int {
	req, _ := http.NewRequest("GET", s.d.url+"/files?"+url.Values{"path": {path}, "username": {user}}.Encode(), nil)
	code, body := s.filesDo(req)
	if code == 500 {
		s.d.t.Logf("%s %s as %s: %s", req.Method, req.URL, user, body)
	}
	return code
}

// fsCall makes one unary filesystem RPC (Connect JSON) as user and returns
// its HTTP status (permission_denied is 403).
func (s *sandbox) fsCall(user, method string, msg map[string]any) int {
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest("POST", s.d.url+"/filesystem.Filesystem/"+method, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	req.SetBasicAuth(user, "")
	code, body := s.filesDo(req)
	if code == 500 {
		s.d.t.Logf("%s %s as %s: %s", req.Method, req.URL, user, body)
	}
	return code
}
