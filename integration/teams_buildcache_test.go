package integration

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// uploadAs asks key's link for template tid's files of hash and PUTs data
// there (E2B's GET /templates/{id}/files/{hash}, then the signed URL).
func (d *daemon) uploadAs(t *testing.T, key, tid, hash string, data []byte) {
	t.Helper()
	var link struct{ URL string }
	if c := d.as(key, "GET", "/templates/"+tid+"/files/"+hash, nil, &link); c != 201 {
		t.Fatalf("files link: %d", c)
	}
	req, _ := http.NewRequest("PUT", link.URL, bytes.NewReader(data))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
}

// tarOf is a tar of one file.
func tarOf(t *testing.T, name, content string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	return b.Bytes()
}

// TestTeamsCopyCache: the filesHash of a COPY step is the client's claim
// about its files, so the build cache must not take it as their identity.
// Team A uploads its own content under the hash that team B's files will
// have (E2B's hash is computed from the files, so whoever knows B's files
// knows it) and builds first; B's build of the same step must still copy
// B's files, never A's cached layer (cross-team cache poisoning). A build
// naming a hash it never uploaded fails, even when another team's layer of
// that hash is cached (no reading another team's files by their hash).
func TestTeamsCopyCache(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	a, b := d.newTeam("cache-a", nil), d.newTeam("cache-b", nil)
	hash := strings.Repeat("ab", 32)
	spec := map[string]any{"fromTemplate": "base", "steps": []map[string]any{
		{"type": "COPY", "args": []string{"app.conf", "/etc/app.conf"}, "filesHash": hash}}}
	build := func(key, name, content string) buildStatus {
		var req struct{ TemplateID, BuildID string }
		if c := d.as(key, "POST", "/v3/templates", map[string]any{"name": name}, &req); c != 202 {
			t.Fatalf("request build %s: %d", name, c)
		}
		if content != "" {
			d.uploadAs(t, key, req.TemplateID, hash, tarOf(t, "app.conf", content))
		}
		if c, _, body := d.call("POST", "/v2/templates/"+req.TemplateID+"/builds/"+req.BuildID, map[string]string{"X-API-Key": key}, spec); c != 202 {
			t.Fatalf("start build %s: %d %s", name, c, body)
		}
		return d.waitBuildAs(t, key, req.TemplateID, req.BuildID)
	}
	if st := build(a.Key, "poison", "attacker's content\n"); st.Status != "ready" {
		t.Fatalf("team A's build: %+v", st)
	}
	if st := build(b.Key, "victim", "victim's content\n"); st.Status != "ready" {
		t.Fatalf("team B's build: %+v", st)
	}
	sb := d.createAs(b.Key, map[string]any{"templateID": "victim", "timeout": 60})
	if out, code := sb.run("user", "cat /etc/app.conf", 10*time.Second); code != 0 || out != "victim's content\n" {
		t.Errorf("team B's template holds %q (exit %d), want its own file", out, code)
	}
	// Team B names the hash without uploading: A's and B's cached layers
	// are not its files.
	if st := build(b.Key, "thief", ""); st.Status != "error" || st.Reason == nil || !strings.Contains(st.Reason.Message, "never uploaded") {
		t.Errorf("a COPY of files never uploaded: %+v", st)
	}
}

// TestTeamsRunCache: a team's RUN layers are not another team's cache.
// Shared, they would let a team build `RUN pip install x` while x is
// malicious (then yanked) and have every later team's identical step take
// that layer, and tell a team which commands other teams have run (a
// CACHED step). Within a team the cache works as before.
func TestTeamsRunCache(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	a, b := d.newTeam("run-a", nil), d.newTeam("run-b", nil)
	spec := map[string]any{"fromTemplate": "base", "steps": []map[string]any{
		{"type": "RUN", "args": []string{"date +%s%N > /stamp", "root"}}}}
	build := func(key, name string) buildStatus {
		tid, bid, code, _ := d.buildAs(t, key, name, spec)
		if code != 202 {
			t.Fatalf("start build %s: %d", name, code)
		}
		st := d.waitBuildAs(t, key, tid, bid)
		if st.Status != "ready" {
			t.Fatalf("build %s: %+v", name, st)
		}
		return st
	}
	stamp := func(key, name string) string {
		sb := d.createAs(key, map[string]any{"templateID": name, "timeout": 60})
		out, _ := sb.run("user", "cat /stamp", 10*time.Second)
		d.deleteAs(key, sb.ID)
		return out
	}
	build(a.Key, "run-a-1")
	if st := build(b.Key, "run-b-1"); logHas(st, "CACHED") {
		t.Errorf("team B's step came from team A's cache: %+v", st.LogEntries)
	}
	if sa, sb := stamp(a.Key, "run-a-1"), stamp(b.Key, "run-b-1"); sa == sb {
		t.Errorf("team B's template holds team A's layer (stamp %q)", sa)
	}
	if st := build(a.Key, "run-a-2"); !logHas(st, "CACHED") {
		t.Errorf("team A's own second build did not use its cache: %+v", st.LogEntries)
	}
}

// TestTeamsUploadDisk: a template's uploaded files (the tars its COPY
// steps take, kept as long as the template) count against the team's disk
// quota, and an upload at the quota is refused with 429 and Retry-After:
// without that a team could PUT 512 MiB under one hash after another until
// the host's disk, shared by every team, is full.
func TestTeamsUploadDisk(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	unmountVolumesAtEnd(t, d)
	tm := d.newTeam("upload-disk", map[string]any{"diskMB": 10})
	var req struct{ TemplateID string }
	if c := d.as(tm.Key, "POST", "/v3/templates", map[string]any{"name": "uploads"}, &req); c != 202 {
		t.Fatalf("request build: %d", c)
	}
	put := func(hash string, n int) (int, string) {
		var link struct{ URL string }
		if c := d.as(tm.Key, "GET", "/templates/"+req.TemplateID+"/files/"+hash, nil, &link); c != 201 {
			t.Fatalf("files link: %d", c)
		}
		r, _ := http.NewRequest("PUT", link.URL, bytes.NewReader(make([]byte, n)))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	if c, _ := put(strings.Repeat("1", 64), 12<<20); c != 201 { // under the quota: it may pass it, once
		t.Fatalf("first upload: %d", c)
	}
	if c, retry := put(strings.Repeat("2", 64), 1024); c != 429 || retry == "" {
		t.Errorf("upload past the disk quota: %d (Retry-After %q), want 429", c, retry)
	}
	if c, _, body := d.call("POST", "/volumes", map[string]string{"X-API-Key": tm.Key}, map[string]any{"name": "v", "sizeMB": 8}); c != 429 {
		t.Errorf("volume while uploads hold the quota: %d %s, want 429", c, body)
	}
}

// TestTeamsUploadDiskConcurrent: uploads at once cannot pass the disk
// quota together. Each upload was checked once, when it began, against
// what the team held, so uploads started together all passed the check
// before any of them had written a byte: eight of 12 MiB under a 10 MiB
// quota all landed (96 MiB), and a team could fill the host's disk with as
// many 512 MiB uploads as it could open. The quota may still be passed
// once, by one upload (as sequential uploads may).
func TestTeamsUploadDiskConcurrent(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	tm := d.newTeam("upload-race", map[string]any{"diskMB": 10})
	var req struct{ TemplateID string }
	if c := d.as(tm.Key, "POST", "/v3/templates", map[string]any{"name": "uploads"}, &req); c != 202 {
		t.Fatalf("request build: %d", c)
	}
	const n, size = 8, 12 << 20
	codes := make(chan int, n)
	writers := make([]*io.PipeWriter, n)
	for i := range n {
		var link struct{ URL string }
		hash := fmt.Sprintf("%064x", i+1)
		if c := d.as(tm.Key, "GET", "/templates/"+req.TemplateID+"/files/"+hash, nil, &link); c != 201 {
			t.Fatalf("files link: %d", c)
		}
		pr, pw := io.Pipe()
		writers[i] = pw
		r, _ := http.NewRequest("PUT", link.URL, pr)
		r.ContentLength = size
		go func() {
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	time.Sleep(time.Second) // every upload's check has run: none has sent a byte
	for _, pw := range writers {
		go func() {
			_, _ = pw.Write(make([]byte, size))
			pw.Close()
		}()
	}
	got := map[int]int{}
	for range n {
		got[<-codes]++
	}
	if got[201] != 1 || got[429] != n-1 {
		t.Errorf("%d uploads of %d MiB at once under a 10 MiB quota: %v, want one 201 and %d 429", n, size>>20, got, n-1)
	}
}

// TestTeamsVolumeDiskConcurrent: volume creates at once cannot pass the
// team's disk quota together. The quota was checked before the create,
// outside the volume manager's lock, so creates sent together all passed
// it and each then allocated its image: one team took the node's volume
// total (--volume-total-mb, shared by every team) past its own quota.
func TestTeamsVolumeDiskConcurrent(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	unmountVolumesAtEnd(t, d)
	tm := d.newTeam("volume-race", map[string]any{"diskMB": 20})
	const n = 6
	codes := make(chan int, n)
	for i := range n {
		go func() {
			code, _, _ := d.call("POST", "/volumes", map[string]string{"X-API-Key": tm.Key}, map[string]any{"name": fmt.Sprintf("v%d", i), "sizeMB": 16})
			codes <- code
		}()
	}
	got := map[int]int{}
	for range n {
		got[<-codes]++
	}
	if got[201] != 1 || got[429] != n-1 {
		t.Errorf("%d volumes of 16 MiB at once under a 20 MiB quota: %v, want one 201 and %d 429", n, got, n-1)
	}
	var vols []volumeRef
	d.as(tm.Key, "GET", "/volumes", nil, &vols)
	for _, v := range vols {
		d.as(tm.Key, "DELETE", "/volumes/"+v.ID, nil, nil)
	}
}
