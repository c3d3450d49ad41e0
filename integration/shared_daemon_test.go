package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRequestFloodBoundsAuditLog: every API call is audited, so a tenant's
// request rate is the shared disk's write rate. On a real daemon, 16
// clients flooding with a team key and 16 with no key get 429s past their
// rate, the audit log grows by their admitted requests and one record a
// second per caller (not one per request), and another team is served
// meanwhile. Before: 12,000 requests a second each audited, 5.7 MB of
// audit log a second.
func TestRequestFloodBoundsAuditLog(t *testing.T) {
	d := startDaemon(t, "crun", "", "--team-api-rate", "50")
	evil, good := d.newTeam("flood-evil", nil), d.newTeam("flood-good", nil)
	floodBoundsAudit(t, d, good, func(i int) *http.Request {
		key := evil.Key
		if i%2 == 1 {
			key = "e2b_wrong"
		}
		req, _ := http.NewRequest("GET", d.url+"/sandboxes/nonexistent", nil)
		req.Header.Set("X-API-Key", key)
		return req
	})
}

// TestVolumeContentFloodBoundsAuditLog: the volume content API, served
// without an API key and audited call by call, is held to the same limits:
// a volume's token to its team's bucket, a request whose token opens
// nothing to its address's. Before, 8000 requests (half with the token,
// half with none that works) were all answered and audited: 3 MB of audit
// log (and, unbounded, 14 MB in 10 s from a client holding no key at all).
// Each admitted call's record names the volume's team (before: the
// default team's, whoever's volume it was).
func TestVolumeContentFloodBoundsAuditLog(t *testing.T) {
	d := startDaemon(t, "crun", "", "--team-api-rate", "50")
	evil, good := d.newTeam("vflood-evil", nil), d.newTeam("vflood-good", nil)
	var vol struct{ VolumeID, Token string }
	if code := d.as(evil.Key, "POST", "/volumes", map[string]any{"name": "flood", "sizeMB": 16}, &vol); code != 201 {
		t.Fatalf("create volume: %d", code)
	}
	t.Cleanup(func() { // the team's bucket may still be empty from the flood
		for i := 0; i < 50 && d.as(evil.Key, "DELETE", "/volumes/"+vol.VolumeID, nil, nil) == http.StatusTooManyRequests; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	floodBoundsAudit(t, d, good, func(i int) *http.Request {
		tok := vol.Token
		if i%2 == 1 {
			tok = "wrong"
		}
		req, _ := http.NewRequest("GET", d.url+"/volumecontent/"+vol.VolumeID+"/path?path=/", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return req
	})
	b, err := os.ReadFile(filepath.Join(d.dataDir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := `"actor":"volume:` + vol.VolumeID + `","fields":{"method":"GET"`
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, want) && strings.Contains(line, `"status":"200"`) && !strings.Contains(line, `"team":"`+evil.ID+`"`) {
			t.Fatalf("a content call of team %s's volume audited as: %s", evil.ID, line)
		}
	}
}

// floodBoundsAudit sends 8000 requests from 32 clients (floodRefused) and
// checks that the audit log grows by under 1 MiB (the admitted ones: the
// refusals are not audited one by one).
func floodBoundsAudit(t *testing.T, d *daemon, good team, req func(i int) *http.Request) {
	logPath := filepath.Join(d.dataDir, "audit.log")
	before := fileSize(t, logPath)
	sent := floodRefused(t, d, good, req)
	grew := fileSize(t, logPath) - before
	t.Logf("audit log +%d bytes", grew)
	// Admitted: burst 250 + 50/s for the team, 100 + 20/s without a key;
	// ~500 bytes a record. 8000 records would be 4 MB.
	if grew > 1<<20 {
		t.Fatalf("audit log grew %d bytes for %d requests: refusals are audited one by one", grew, sent)
	}
}

// floodRefused sends 8000 requests from 32 clients (req(i) makes the i-th
// client's) and checks that most are refused (429) and another team is
// served meanwhile. It returns the number sent.
func floodRefused(t *testing.T, d *daemon, good team, req func(i int) *http.Request) int64 {
	var sent, limited atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				resp, err := http.DefaultClient.Do(req(i))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				sent.Add(1)
				if resp.StatusCode == http.StatusTooManyRequests {
					limited.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if code, _, _ := d.call("GET", "/sandboxes", map[string]string{"X-API-Key": good.Key}, nil); code != 200 {
		t.Fatalf("another team after the flood: %d", code)
	}
	t.Logf("%d requests, %d refused (429)", sent.Load(), limited.Load())
	if limited.Load() < sent.Load()/2 {
		t.Fatalf("only %d of %d requests refused", limited.Load(), sent.Load())
	}
	return sent.Load()
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestUnroutedFloodBoundsLog: requests no route takes (404) and refused
// upload links (403) come from clients without a key and are logged one
// line each; they are held to the address's bucket of unauthenticated
// requests, so 8000 of them from 32 clients log a few hundred lines, not
// 8000 (before: every one logged, 1.1 MB of log a second, which under
// journald's rate limit also silences the daemon's own lines).
func TestUnroutedFloodBoundsLog(t *testing.T) {
	d := startDaemon(t, "crun", "")
	good := d.newTeam("unrouted-good", nil)
	lines := func() int { return strings.Count(d.log.String(), `msg="api request"`) }
	before := lines()
	floodRefused(t, d, good, func(i int) *http.Request {
		if i%2 == 1 {
			req, _ := http.NewRequest("PUT", d.url+"/sbx/uploads/t/h?expires=1&signature=x", nil)
			return req
		}
		req, _ := http.NewRequest("GET", d.url+"/no/such/endpoint", nil)
		return req
	})
	logged := lines() - before
	t.Logf("%d request lines logged", logged)
	if logged > 1000 {
		t.Fatalf("%d request lines logged for 8000 unauthenticated requests: not limited", logged)
	}
}
