package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCreateWaitsForSlowAgent: a real daemon whose sandboxes' agents do not
// take /init at first (failpoint create/init-unreachable=error5: the first
// five attempts fail as a refused connection would) still creates working
// sandboxes: the create waits for the agent instead of answering 500.
func TestCreateWaitsForSlowAgent(t *testing.T) {
	for _, rt := range []string{"crun", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemonEnv(t, rt, "", []string{"SBX_FAILPOINTS=create/init-unreachable=error5"})
			defer d.stop(syscall.SIGTERM)
			sb := d.create(nil)
			if out, _ := sb.run("", "echo ok", 20*time.Second); out != "ok\n" {
				t.Fatalf("sandbox created past a slow agent does not work: %q", out)
			}
			d.deleteQuiet(sb.ID)
		})
	}
}

// TestCreateAgentNeverReachable: when the agent never takes /init, the create
// fails with a retryable 503 (Retry-After, {code, message}), never 500, and
// leaves nothing behind.
func TestCreateAgentNeverReachable(t *testing.T) {
	d := startDaemonEnv(t, "crun", "", []string{"SBX_FAILPOINTS=create/init-unreachable"})
	defer d.stop(syscall.SIGTERM)
	base := d.inventory()
	req, _ := http.NewRequest("POST", d.url+"/v2/sandboxes", bytes.NewReader([]byte(`{"templateID":"base"}`)))
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &e)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || e.Code != 503 || !strings.Contains(e.Message, "init") {
		t.Fatalf("create with an unreachable agent = %d Retry-After=%q %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	d.backToBaseline(t, base)
}
