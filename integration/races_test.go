package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKillRaces: a kill during a running exec ends its stream at once; a
// second kill is 404; exec after the kill is refused (502, the SDK's "not
// running"); nothing is left on the host.
func TestKillRaces(t *testing.T) {
	d := startDaemon(t, "crun", "")
	base := d.inventory()
	sb := d.create(nil)
	done := make(chan error, 1)
	go func() {
		_, _, err := sb.runErr("", "echo started; sleep 60", 90*time.Second)
		done <- err
	}()
	time.Sleep(time.Second)
	if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Fatalf("kill during exec: %d", code)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("exec stream ended cleanly although its sandbox was killed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exec stream still open 10 s after its sandbox was killed")
	}
	if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 404 {
		t.Errorf("second kill: %d, want 404", code)
	}
	if _, _, err := sb.runErr("", "echo late", 10*time.Second); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("exec after kill: %v, want 502", err)
	}
	d.backToBaseline(t, base, sb.ID)
}

// TestParallelUploadsOnePath: 16 concurrent uploads to one path each land
// whole (the agent serialises writes to one path; each is in place): the file
// ends as exactly one of them, never a mix, and no other name appears.
func TestParallelUploadsOnePath(t *testing.T) {
	d := startDaemon(t, "crun", "")
	sb := d.create(nil)
	before, _ := sb.run("", "ls -A /home/user", 20*time.Second)
	var wg sync.WaitGroup
	bodies := map[string]bool{}
	for i := 0; i < 16; i++ {
		body := strings.Repeat(fmt.Sprintf("%02d", i), 256<<10) // 512 KiB each
		bodies[body] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, msg := sb.upload("/home/user/same.txt", []byte(body)); code != 200 {
				t.Errorf("upload: %d %s", code, msg)
			}
		}()
	}
	wg.Wait()
	got, code := sb.download("/home/user/same.txt")
	if code != 200 || !bodies[got] {
		t.Fatalf("after parallel uploads: %d, %d bytes, not one whole upload (prefix %q)", code, len(got), truncate(got, 8))
	}
	after, _ := sb.run("", "ls -A /home/user", 20*time.Second)
	if added := newNames(before, after); len(added) != 1 || added[0] != "same.txt" {
		t.Errorf("names new in the home after the uploads: %q, want only same.txt", added)
	}
}

// newNames lists the lines of after that are not in before.
func newNames(before, after string) []string {
	had := map[string]bool{}
	for _, n := range strings.Fields(before) {
		had[n] = true
	}
	var out []string
	for _, n := range strings.Fields(after) {
		if !had[n] {
			out = append(out, n)
		}
	}
	return out
}

// upload writes body to path in the sandbox through /files (as user).
func (s *sandbox) upload(path string, body []byte) (int, string) {
	req, _ := http.NewRequest("POST", s.d.url+"/files?"+url.Values{"path": {path}, "username": {"user"}}.Encode(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	return s.filesDo(req)
}

// download reads path from the sandbox through /files (as user).
func (s *sandbox) download(path string) (string, int) {
	req, _ := http.NewRequest("GET", s.d.url+"/files?"+url.Values{"path": {path}, "username": {"user"}}.Encode(), nil)
	code, body := s.filesDo(req)
	return body, code
}

func (s *sandbox) filesDo(req *http.Request) (int, string) {
	req.Header.Set("E2b-Sandbox-Id", s.ID)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	req.Header.Set("X-Access-Token", s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
