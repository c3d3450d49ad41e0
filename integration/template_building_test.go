package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCreateWhileTemplateBuilds: a create from a built-in template that is
// not built is 404; while a process on the host holds its build lock (as
// `sbx template build NAME` does, e.g. in scripts/up.sh's background on a
// first start) it is 503 with Retry-After and a message saying so; after
// the builder exits, 404 again. The daemon has its own empty templates dir.
func TestCreateWhileTemplateBuilds(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	tmpl := t.TempDir()
	d := startDaemon(t, "runsc", "", "--templates-dir", tmpl)
	const name = "code-interpreter-v1"
	if code, _, _ := createStatus(t, d, name); code != http.StatusNotFound {
		t.Fatalf("create before any build: %d, want 404", code)
	}
	lock := filepath.Join(tmpl, ".building-"+name)
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	builder := exec.Command("flock", "--no-fork", "-x", lock, "sleep", "60") // stands in for sbx template build
	if err := builder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = builder.Process.Kill(); _ = builder.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, retry, msg := createStatus(t, d, name)
		if code == http.StatusServiceUnavailable {
			if retry == "" || !strings.Contains(msg, "being built") {
				t.Fatalf("503 without Retry-After (%q) or a clear message (%q)", retry, msg)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create while building: %d %q, want 503", code, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = builder.Process.Kill()
	_ = builder.Wait()
	if code, _, msg := createStatus(t, d, name); code != http.StatusNotFound {
		t.Fatalf("create after the builder died: %d %q, want 404", code, msg)
	}
}

// createStatus posts a create of template and returns the status, the
// Retry-After header and the error message.
func createStatus(t *testing.T, d *daemon, template string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", d.url+"/sandboxes", strings.NewReader(`{"templateID":"`+template+`"}`))
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Message   string `json:"message"`
		SandboxID string `json:"sandboxID"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode == http.StatusCreated {
		d.deleteQuiet(e.SandboxID) // not expected; keep the host clean
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), e.Message
}
