package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// 1000 concurrent creates: admission control answers every one it cannot
// take with 429 or 503, a JSON error and Retry-After; the rest are created;
// the daemon stays healthy and, once they are killed, nothing is left.
func TestThousandConcurrentCreates(t *testing.T) {
	for _, lim := range []struct{ creating, queued, sandboxes int }{{16, 0, 200}, {8, 64, 1000}, {1000, 0, 100}} {
		t.Run("", func(t *testing.T) { burst(t, lim.creating, lim.queued, lim.sandboxes) })
	}
}

func burst(t *testing.T, maxCreating, maxQueued, maxSandboxes int) {
	srv, h := newServerWith(t, func(c *sandbox.Config) {
		c.MaxCreating, c.MaxQueued, c.MaxSandboxes = maxCreating, maxQueued, maxSandboxes
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	var mu sync.Mutex
	statuses := map[int]int{}
	var created []string
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, id, err := burstCreate(client, srv.URL)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			statuses[code]++
			if id != "" {
				created = append(created, id)
			}
		}()
	}
	wg.Wait()
	t.Logf("statuses: %v", statuses)
	if statuses[201] == 0 || statuses[201] > maxSandboxes || statuses[201]+statuses[429]+statuses[503] != 1000 {
		t.Fatalf("statuses %v: want only 201 (at most %d), 429, 503", statuses, maxSandboxes)
	}
	if code, rep := do(t, srv, "GET", "/health", "", nil); code != 200 || rep["status"] != "ok" {
		t.Fatalf("health after the burst = %d %v", code, rep)
	}
	for _, id := range created {
		if code, _ := do(t, srv, "DELETE", "/sandboxes/"+id, "", nil); code != 204 {
			t.Fatalf("kill %s = %d", id, code)
		}
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue after the burst: %s", r)
	}
}

// burstCreate does one create; a refusal must carry Retry-After and the
// {code, message} body.
func burstCreate(c *http.Client, url string) (int, string, error) {
	req, _ := http.NewRequest("POST", url+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", testKey)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body struct {
		SandboxID string `json:"sandboxID"`
		Code      int    `json:"code"`
		Message   string `json:"message"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return resp.StatusCode, "", err
	}
	if resp.StatusCode != 201 && (resp.Header.Get("Retry-After") == "" || body.Code != resp.StatusCode || body.Message == "") {
		return resp.StatusCode, "", &burstErr{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
	}
	return resp.StatusCode, body.SandboxID, nil
}

type burstErr struct {
	code       int
	retryAfter string
	body       string
}

func (e *burstErr) Error() string {
	return "refusal " + http.StatusText(e.code) + " without Retry-After or error body: Retry-After=" + e.retryAfter + " body=" + e.body
}
