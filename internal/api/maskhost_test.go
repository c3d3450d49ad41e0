package api_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestMaskRequestHost: network.maskRequestHost is kept, shown by getInfo
// and kept by an update of the egress rules (E2B's network.test.ts); a mask
// that would not make a Host header is 400 naming the field.
func TestMaskRequestHost(t *testing.T) {
	srv, _ := newServer(t)
	code, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","network":{"maskRequestHost":"custom-host.example.com:${PORT}"}}`, nil)
	if code != 201 {
		t.Fatalf("create = %d %v", code, sb)
	}
	id := sb["sandboxID"].(string)
	mask := func() any {
		_, d := do(t, srv, "GET", "/sandboxes/"+id, "", nil)
		n, _ := d["network"].(map[string]any)
		return n["maskRequestHost"]
	}
	if got := mask(); got != "custom-host.example.com:${PORT}" {
		t.Fatalf("getInfo network.maskRequestHost = %v", got)
	}
	if code, _ := do(t, srv, "PUT", "/sandboxes/"+id+"/network", `{"denyOut":["8.8.8.8"]}`, nil); code != 204 {
		t.Fatalf("PUT = %d", code)
	}
	if got := mask(); got != "custom-host.example.com:${PORT}" {
		t.Fatalf("network.maskRequestHost after an update = %v", got)
	}
	for _, bad := range []string{`""`, `"a b"`, `"a\r\nX-Evil: 1"`, `"` + strings.Repeat("a", 300) + `"`, `"a/b"`} {
		code, e := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","network":{"maskRequestHost":`+bad+`}}`, nil)
		if msg, _ := e["message"].(string); code != 400 || !strings.Contains(msg, "maskRequestHost") {
			t.Errorf("create with maskRequestHost %s = %d %v, want 400 naming it", bad, code, e)
		}
	}
}

// TestHTTPSPorts: network.httpsPorts is kept, shown by getInfo and kept by
// an update of the egress rules (E2B's network.test.ts); a port that is no
// sandbox port, or envd's, is 400 naming the field.
func TestHTTPSPorts(t *testing.T) {
	srv, _ := newServer(t)
	code, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","network":{"httpsPorts":[8443]}}`, nil)
	if code != 201 {
		t.Fatalf("create = %d %v", code, sb)
	}
	id := sb["sandboxID"].(string)
	ports := func() string {
		_, d := do(t, srv, "GET", "/sandboxes/"+id, "", nil)
		n, _ := d["network"].(map[string]any)
		return fmt.Sprint(n["httpsPorts"])
	}
	if got := ports(); got != "[8443]" {
		t.Fatalf("getInfo network.httpsPorts = %v", got)
	}
	if code, _ := do(t, srv, "PUT", "/sandboxes/"+id+"/network", `{}`, nil); code != 204 {
		t.Fatalf("PUT = %d", code)
	}
	if got := ports(); got != "[8443]" {
		t.Fatalf("network.httpsPorts after an update = %v", got)
	}
	for _, bad := range []string{`[0]`, `[70000]`, `[49983]`, `[-1]`} {
		code, e := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","network":{"httpsPorts":`+bad+`}}`, nil)
		if msg, _ := e["message"].(string); code != 400 || !strings.Contains(msg, "httpsPorts") {
			t.Errorf("create with httpsPorts %s = %d %v, want 400 naming it", bad, code, e)
		}
	}
}
