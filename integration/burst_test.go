package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestCreateBurst sends 40 concurrent creates to a real daemon admitting 4
// at a time and queueing 8 more: each answer is 201 or 429/503 with Retry-After and an error
// body, the daemon stays healthy, every created sandbox works, and after
// deleting them the host inventory is back at its baseline.
func TestCreateBurst(t *testing.T) {
	d := startDaemon(t, "crun", "", "--max-creating", "4", "--max-queued", "8")
	base := d.inventory()
	var mu sync.Mutex
	statuses := map[int]int{}
	var created []*sandbox
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, sb, err := d.burstCreate()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
			}
			statuses[code]++
			if sb != nil {
				created = append(created, sb)
			}
		}()
	}
	wg.Wait()
	t.Logf("statuses: %v", statuses)
	if statuses[201] == 0 || statuses[201]+statuses[429]+statuses[503] != 40 {
		t.Errorf("statuses %v: want 201, 429 or 503 only", statuses)
	}
	if code, rep := d.health(); code != 200 || rep["status"] != "ok" {
		t.Errorf("health after the burst: %d %v", code, rep)
	}
	var ids []string
	for _, sb := range created {
		ids = append(ids, sb.ID)
		if out, _ := sb.run("", "echo ok", 20*time.Second); out != "ok\n" {
			t.Errorf("sandbox from the burst: %q", out)
		}
		if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
			t.Errorf("delete: %d", code)
		}
	}
	d.backToBaseline(t, base, ids...)
}

// burstCreate is one create that may be refused; a refusal must carry
// Retry-After and {code, message}.
func (d *daemon) burstCreate() (int, *sandbox, error) {
	req, _ := http.NewRequest("POST", d.url+"/v2/sandboxes", bytes.NewReader([]byte(`{"templateID":"base"}`)))
	req.Header.Set("X-API-Key", apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 201 {
		sb := &sandbox{d: d}
		err := json.Unmarshal(b, sb)
		d.t.Cleanup(func() { d.deleteQuiet(sb.ID) })
		return 201, sb, err
	}
	var e struct {
		Code    int
		Message string
	}
	_ = json.Unmarshal(b, &e)
	if resp.Header.Get("Retry-After") == "" || e.Code != resp.StatusCode || e.Message == "" {
		return resp.StatusCode, nil, &refusalErr{resp.StatusCode, string(b)}
	}
	return resp.StatusCode, nil, nil
}

type refusalErr struct {
	code int
	body string
}

func (e *refusalErr) Error() string {
	return http.StatusText(e.code) + " without Retry-After or {code, message}: " + e.body
}
