package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// dashSession is a browser signed in to a daemon's dashboard.
type dashSession struct {
	d      *daemon
	cookie string // "sbx_dashboard=..."
	csrf   string
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// dashSignIn posts the sign-in form as a browser on the daemon's origin
// would and reads the CSRF token from the app page.
func dashSignIn(t *testing.T, d *daemon, key string) *dashSession {
	t.Helper()
	req, _ := http.NewRequest("POST", d.url+"/dashboard/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", d.url)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in: %d %v", resp.StatusCode, resp.Cookies())
	}
	s := &dashSession{d: d, cookie: resp.Cookies()[0].Name + "=" + resp.Cookies()[0].Value}
	code, body := s.do("GET", "/dashboard/sandboxes", true, nil)
	_, after, _ := strings.Cut(string(body), `name="csrf-token" content="`)
	s.csrf, _, _ = strings.Cut(after, `"`)
	if code != 200 || s.csrf == "" {
		t.Fatalf("app page: %d", code)
	}
	return s
}

// do sends a request with the session cookie and the daemon's Origin; with
// csrf the session's token too.
func (s *dashSession) do(method, path string, csrf bool, body io.Reader) (int, []byte) {
	s.d.t.Helper()
	req, _ := http.NewRequest(method, s.d.url+path, body)
	req.Header.Set("Cookie", s.cookie)
	req.Header.Set("Origin", s.d.url)
	if csrf {
		req.Header.Set("X-CSRF-Token", s.csrf)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		s.d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// terminal opens the dashboard's terminal WebSocket of sandbox id.
func (s *dashSession) terminal(id, csrf string) (*websocket.Conn, error) {
	cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(s.d.url, "http")+"/dashboard/term/"+id, s.d.url)
	if err != nil {
		return nil, err
	}
	cfg.Header.Set("Cookie", s.cookie)
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		return nil, err
	}
	return ws, websocket.JSON.Send(ws, map[string]any{"type": "hello", "csrf": csrf, "cols": 100, "rows": 30})
}

// readUntil reads terminal frames until the output contains want.
func readUntil(t *testing.T, ws *websocket.Conn, want string) string {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	var out strings.Builder
	for !strings.Contains(out.String(), want) {
		var frame []byte
		if err := websocket.Message.Receive(ws, &frame); err != nil {
			t.Fatalf("terminal: %v; so far %q", err, out.String())
		}
		out.Write(frame)
	}
	return out.String()
}

// waitResized asks the shell for its size (stty size) once a second until
// it answers want (readUntil's 20 s): a resize is applied beside the input
// stream, not in order with it, so a command typed right after a resize
// may still see the old size (it did once, on a loaded machine).
func waitResized(t *testing.T, ws *websocket.Conn, want string) {
	t.Helper()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for tick := time.NewTicker(time.Second); ; {
			_ = websocket.JSON.Send(ws, map[string]any{"type": "input", "data": "stty size\n"})
			select {
			case <-done:
				tick.Stop()
				return
			case <-tick.C:
			}
		}
	}()
	readUntil(t, ws, want)
}

// TestDashboard drives the dashboard's HTTP surface on a real daemon
// (runsc): a real PTY through the agent over the WebSocket, resize, files,
// and the team gate: another team's session gets the same 404 as for an
// unknown id on every path and cannot kill; the owner needs the CSRF
// token to kill.
func TestDashboard(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	other := d.newTeam("dash-other", nil)
	sb := d.create(nil)
	a, b := dashSignIn(t, d, apiKey), dashSignIn(t, d, other.Key)

	if code, body := a.do("GET", "/dashboard/api/sandboxes/"+sb.ID, false, nil); code != 200 {
		t.Fatalf("owner GET: %d %s", code, body)
	}
	ws, err := a.terminal(sb.ID, a.csrf)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = websocket.JSON.Send(ws, map[string]any{"type": "input", "data": "echo dash-$((6*7)); tty\n"})
	if out := readUntil(t, ws, "/dev/pts/"); !strings.Contains(out, "dash-42") { // a real pty
		t.Fatalf("terminal output %q", out)
	}
	_ = websocket.JSON.Send(ws, map[string]any{"type": "resize", "cols": 123, "rows": 45})
	waitResized(t, ws, "45 123")

	if ws2, err := a.terminal(sb.ID, "wrong"); err == nil {
		var msg string
		_ = ws2.SetReadDeadline(time.Now().Add(10 * time.Second))
		_ = websocket.Message.Receive(ws2, &msg)
		ws2.Close()
		if !strings.Contains(msg, "CSRF") {
			t.Fatalf("terminal with a wrong CSRF token answered %q", msg)
		}
	}

	if code, body := a.do("POST", "/dashboard/files/"+sb.ID+"/upload?path=/home/user/up.txt", true, strings.NewReader("hello dash")); code != 204 {
		t.Fatalf("upload: %d %s", code, body)
	}
	if code, body := a.do("GET", "/dashboard/files/"+sb.ID+"/download?path=/home/user/up.txt", false, nil); code != 200 || string(body) != "hello dash" {
		t.Fatalf("download: %d %q", code, body)
	}
	var list []struct{ Name string }
	_, body := a.do("GET", "/dashboard/files/"+sb.ID+"?path=/home/user", false, nil)
	if err := json.Unmarshal(body, &list); err != nil || !strings.Contains(string(body), `"up.txt"`) {
		t.Fatalf("list: %v %s", err, body)
	}

	unknown := sb.ID[:len(sb.ID)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(sb.ID, "a")]
	for _, p := range []string{"/dashboard/api/sandboxes/%s", "/dashboard/api/sandboxes/%s/metrics", "/dashboard/files/%s?path=/",
		"/dashboard/files/%s/download?path=/etc/hostname", "/dashboard/term/%s"} {
		c1, b1 := b.do("GET", strings.Replace(p, "%s", sb.ID, 1), false, nil)
		c2, b2 := b.do("GET", strings.Replace(p, "%s", unknown, 1), false, nil)
		if c1 != 404 || c2 != 404 || strings.ReplaceAll(string(b1), sb.ID, "ID") != strings.ReplaceAll(string(b2), unknown, "ID") {
			t.Fatalf("%s: other team %d %s, unknown %d %s", p, c1, b1, c2, b2)
		}
	}
	if code, _ := b.do("DELETE", "/dashboard/api/sandboxes/"+sb.ID, true, nil); code != 404 {
		t.Fatalf("other team's kill: %d", code)
	}
	if code, _ := a.do("DELETE", "/dashboard/api/sandboxes/"+sb.ID, false, nil); code != 403 {
		t.Fatalf("kill without CSRF token: %d", code)
	}
	if code, _ := a.do("GET", "/dashboard/api/sandboxes/"+sb.ID, false, nil); code != 200 {
		t.Fatalf("sandbox gone after refused kills: %d", code)
	}
	// a terminal ends with the session that opened it
	c := dashSignIn(t, d, apiKey)
	ws3, err := c.terminal(sb.ID, c.csrf)
	if err != nil {
		t.Fatal(err)
	}
	defer ws3.Close()
	_ = websocket.JSON.Send(ws3, map[string]any{"type": "input", "data": "echo ready-$((2*3))\n"})
	readUntil(t, ws3, "ready-6")
	if code, _ := c.do("POST", "/dashboard/logout", true, nil); code != 204 {
		t.Fatalf("sign-out: %d", code)
	}
	readUntil(t, ws3, "the session ended")

	if code, body := a.do("DELETE", "/dashboard/api/sandboxes/"+sb.ID, true, nil); code != 204 {
		t.Fatalf("owner's kill: %d %s", code, body)
	}
}
