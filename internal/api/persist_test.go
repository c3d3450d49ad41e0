package api_test

import "testing"

// TestPersistEndpoints: lifecycle fields round-trip, bad bodies are 400,
// and a node that cannot checkpoint answers 501 {code, message}.
func TestPersistEndpoints(t *testing.T) {
	srv, _ := newServer(t)
	code, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","autoPause":true,"autoResume":{"enabled":true}}`, nil)
	if code != 201 {
		t.Fatalf("create with autoPause = %d %v", code, sb)
	}
	id := sb["sandboxID"].(string)
	_, d := do(t, srv, "GET", "/sandboxes/"+id, "", nil)
	if lc, _ := d["lifecycle"].(map[string]any); lc["onTimeout"] != "pause" || lc["autoResume"] != true {
		t.Fatalf("lifecycle = %v", d["lifecycle"])
	}
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"bad autoResume", "POST", "/v2/sandboxes", `{"templateID":"base","autoResume":true}`, 400},
		{"pause, no checkpoints here", "POST", "/sandboxes/" + id + "/pause", `{}`, 501},
		{"pause bad body", "POST", "/sandboxes/" + id + "/pause", `{"memory":"yes"}`, 400},
		{"pause unknown", "POST", "/sandboxes/aaaaaaaaaaaaaaaaaaaa/pause", ``, 404},
		{"fork count 0", "POST", "/sandboxes/" + id + "/fork", `{"count":0}`, 400},
		{"fork count 17", "POST", "/sandboxes/" + id + "/fork", `{"count":17}`, 400},
		{"fork", "POST", "/sandboxes/" + id + "/fork", `{"count":2}`, 501},
		{"snapshot bad name", "POST", "/sandboxes/" + id + "/snapshots", `{"name":"A B"}`, 400},
		{"snapshot", "POST", "/sandboxes/" + id + "/snapshots", `{}`, 501},
		{"connect running", "POST", "/v2/sandboxes/" + id + "/connect", `{"timeout":30}`, 200},
		{"resume running", "POST", "/sandboxes/" + id + "/resume", `{}`, 409},
		{"delete template", "DELETE", "/templates/base", ``, 501},
		{"delete unknown snapshot", "DELETE", "/templates/nope", ``, 404},
		{"snapshots", "GET", "/snapshots", ``, 200},
		{"storage", "GET", "/sbx/storage", ``, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, e := do(t, srv, tt.method, tt.path, tt.body, nil)
			if code != tt.want {
				t.Fatalf("status %d, want %d: %v", code, tt.want, e)
			}
			if code >= 400 && e["code"] != float64(code) {
				t.Fatalf("error body %v lacks code %d", e, code)
			}
		})
	}
}
