package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// volumeRef is a created volume and its content token.
type volumeRef struct {
	ID    string `json:"volumeID"`
	Name  string `json:"name"`
	Token string `json:"token"`
}

// content does one volume content API call (bearer token, raw body).
func (d *daemon) content(v volumeRef, method, path, body string) (int, string) {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.url+"/volumecontent/"+v.ID+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+v.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// volumeMounts under a data dir (loop mounts and idmapped views).
func volumeMounts(dataDir string) []string {
	out, _ := exec.Command("findmnt", "-rn", "-o", "TARGET").Output()
	var ms []string
	for _, l := range strings.Fields(string(out)) {
		if strings.HasPrefix(l, filepath.Join(dataDir, "volumes")+"/") {
			ms = append(ms, l)
		}
	}
	return ms
}

// unmountVolumesAtEnd detaches the volume mounts under d's data dir when
// the test ends (volumes stay mounted across daemon restarts by design).
func unmountVolumesAtEnd(t *testing.T, d *daemon) {
	t.Cleanup(func() {
		for _, m := range volumeMounts(d.dataDir) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	})
}

// TestVolumes: on each runtime, two sandboxes share a volume (one of them
// also read-only), ownership is the same as seen from every side, the
// quota holds from inside, symlinks planted inside never lead the content
// API out, and the volume and its mounts survive a daemon crash.
func TestVolumes(t *testing.T) {
	for _, rt := range []string{"runsc", "crun", "runc"} {
		t.Run(rt, func(t *testing.T) { testVolumes(t, rt) })
	}
}

func testVolumes(t *testing.T, rt string) {
	d := startDaemon(t, rt, "")
	unmountVolumesAtEnd(t, d)
	var v volumeRef
	if code := d.api("POST", "/volumes", map[string]any{"name": "shared-" + rt, "sizeMB": 16}, &v); code != 201 {
		t.Fatalf("create volume: %d", code)
	}
	if code, body := d.content(v, "PUT", "/file?path=/seed/hello.txt", "from the API"); code != 201 {
		t.Fatalf("content write: %d %s", code, body)
	}
	mounts := []map[string]any{{"name": v.Name, "path": "/mnt/v"}}
	a := d.create(map[string]any{"volumeMounts": mounts})
	b := d.create(map[string]any{"volumeMounts": append(mounts, map[string]any{"name": v.Name, "path": "/mnt/ro", "readOnly": true})})

	if out, _ := a.run("user", "cat /mnt/v/seed/hello.txt && stat -c %u:%g /mnt/v/seed/hello.txt", 20*time.Second); out != "from the API1000:1000\n" {
		t.Errorf("sandbox A reads %q, want the API's file owned by user", out)
	}
	a.run("user", "echo from-a > /mnt/v/a.txt", 20*time.Second)
	a.run("root", "echo root > /mnt/v/r.txt", 20*time.Second)
	if out, _ := b.run("user", "cat /mnt/v/a.txt /mnt/ro/r.txt; stat -c %u /mnt/v/a.txt /mnt/v/r.txt", 20*time.Second); out != "from-a\nroot\n1000\n0\n" {
		t.Errorf("sandbox B sees %q, want A's files with their owners (1000, 0)", out)
	}
	if out, code := b.run("root", "echo x > /mnt/ro/x", 20*time.Second); code == 0 || !strings.Contains(out, "Read-only") {
		t.Errorf("write to a read-only mount: exit %d %q", code, out)
	}
	if code, body := d.content(v, "GET", "/path?path=/a.txt", ""); code != 200 || !strings.Contains(body, `"uid":1000`) {
		t.Errorf("content API stat of A's file: %d %s", code, body)
	}
	if out, code := a.run("user", "dd if=/dev/zero of=/mnt/v/fill bs=1M count=32 2>&1; rm -f /mnt/v/fill", 60*time.Second); code == 0 && !strings.Contains(out, "No space") {
		t.Errorf("writing 32 MiB into a 16 MiB volume from inside: exit %d %q", code, out)
	}
	volumeSymlinks(t, d, v, a)

	d.stop(syscall.SIGKILL)
	d2 := startDaemon(t, rt, d.dataDir)
	a.d, b.d = d2, d2
	t.Cleanup(func() { d2.deleteQuiet(a.ID); d2.deleteQuiet(b.ID) })
	if out, _ := b.run("user", "cat /mnt/v/a.txt", 20*time.Second); out != "from-a\n" {
		t.Errorf("after a daemon crash sandbox B reads %q", out)
	}
	if code, body := d2.content(v, "GET", "/file?path=/a.txt", ""); code != 200 || body != "from-a\n" {
		t.Errorf("after a daemon crash the content API reads %d %q", code, body)
	}
	pauseKeepsVolume(t, d2, a, rt == "runsc") // files only on crun/runc: a cold boot from the record
	if code := d2.api("DELETE", "/volumes/"+v.ID, nil, nil); code != 409 {
		t.Errorf("delete of a mounted volume: %d, want 409", code)
	}
	d2.deleteQuiet(a.ID)
	d2.deleteQuiet(b.ID)
	if code := d2.api("DELETE", "/volumes/"+v.ID, nil, nil); code != 204 {
		t.Errorf("delete of an unused volume: %d", code)
	}
	if ms := volumeMounts(d2.dataDir); len(ms) != 0 {
		t.Errorf("mounts left after the volume's delete: %v", ms)
	}
}

// volumeSymlinks plants escape symlinks from inside sandbox s and drives
// the content API through them.
func volumeSymlinks(t *testing.T, d *daemon, v volumeRef, s *sandbox) {
	t.Helper()
	marker := fmt.Sprintf("sbx-volume-escape-%d", time.Now().UnixNano())
	s.run("root", "ln -s /etc/hostname /mnt/v/leak && ln -s / /mnt/v/hostroot && ln -s ../../../../../../tmp /mnt/v/up", 20*time.Second)
	for _, p := range []string{"/leak", "/hostroot/etc/hostname", "/up/../etc/hostname", "/hostroot" + d.dataDir + "/sbx.db"} {
		if code, body := d.content(v, "GET", "/file?path="+p, ""); code == 200 {
			t.Errorf("content read of %s through a planted symlink answered %q", p, body)
		}
	}
	for _, p := range []string{"/hostroot/tmp/" + marker, "/up/" + marker} {
		d.content(v, "PUT", "/file?path="+p, "x")
	}
	if _, err := os.Stat("/tmp/" + marker); err == nil {
		os.Remove("/tmp/" + marker)
		t.Error("a content write through a planted symlink landed on the host")
	}
	if code, _ := d.content(v, "DELETE", "/path?path=/hostroot", ""); code != 204 {
		t.Errorf("removing the planted symlink: %d", code)
	}
	if _, err := os.Stat("/etc/hostname"); err != nil {
		t.Errorf("removing a symlink removed its target: %v", err)
	}
}

// pauseKeepsVolume pauses (with memory or files only) and resumes s: the
// mount is back, writable.
func pauseKeepsVolume(t *testing.T, d *daemon, s *sandbox, memory bool) {
	t.Helper()
	if code := d.api("POST", "/sandboxes/"+s.ID+"/pause", map[string]bool{"memory": memory}, nil); code != 204 {
		t.Fatalf("pause: %d\n%s", code, tail(d.log.String(), 2000))
	}
	if code := d.api("DELETE", "/volumes/x-unknown", nil, nil); code != 404 {
		t.Errorf("delete of an unknown volume: %d", code)
	}
	if code := d.api("POST", "/sandboxes/"+s.ID+"/resume", map[string]any{"timeout": 60}, nil); code != 201 {
		t.Fatalf("resume: %d\n%s", code, tail(d.log.String(), 2000))
	}
	if out, _ := s.run("user", "cat /mnt/v/a.txt && echo resumed > /mnt/v/p.txt && cat /mnt/v/p.txt", 20*time.Second); out != "from-a\nresumed\n" {
		t.Errorf("after pause and resume: %q", out)
	}
}
