package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
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
	logPath := filepath.Join(d.dataDir, "audit.log")
	before := fileSize(t, logPath)
	var sent, limited atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		key := evil.Key
		if i%2 == 1 {
			key = "e2b_wrong"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				req, _ := http.NewRequest("GET", d.url+"/sandboxes/nonexistent", nil)
				req.Header.Set("X-API-Key", key)
				resp, err := http.DefaultClient.Do(req)
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
	grew := fileSize(t, logPath) - before
	t.Logf("%d requests, %d refused (429), audit log +%d bytes", sent.Load(), limited.Load(), grew)
	if limited.Load() < sent.Load()/2 {
		t.Fatalf("only %d of %d requests refused", limited.Load(), sent.Load())
	}
	// Admitted: burst 250 + 50/s for the team, 100 + 20/s without a key;
	// ~500 bytes a record. 8000 records would be 4 MB.
	if grew > 1<<20 {
		t.Fatalf("audit log grew %d bytes for %d requests: refusals are audited one by one", grew, sent.Load())
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
