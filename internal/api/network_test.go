package api_test

import (
	"testing"
)

// TestNetworkPolicy: egress settings are accepted on create and replaced by
// PUT /sandboxes/{id}/network (omitted fields cleared); bad rules are 400.
func TestNetworkPolicy(t *testing.T) {
	srv, h := newServer(t)
	code, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","allow_internet_access":true,
		"network":{"allowOut":["1.1.1.1","*.example.com"],"denyOut":["0.0.0.0/0"],"allowPublicTraffic":false}}`, nil)
	if code != 201 {
		t.Fatalf("create = %d %v", code, sb)
	}
	id := sb["sandboxID"].(string)
	h.Mu.Lock()
	p := h.Policies[id]
	h.Mu.Unlock()
	if !p.DenyAll || len(p.AllowNets) != 1 || len(p.AllowDoms) != 1 {
		t.Fatalf("policy applied = %+v", p)
	}
	if code, _ := do(t, srv, "PUT", "/sandboxes/"+id+"/network", `{"denyOut":["8.8.8.8"]}`, nil); code != 204 {
		t.Fatalf("PUT = %d", code)
	}
	h.Mu.Lock()
	p = h.Policies[id]
	h.Mu.Unlock()
	if p.DenyAll || len(p.AllowNets) != 0 || len(p.DenyNets) != 1 {
		t.Fatalf("policy after PUT = %+v", p)
	}
	_, d := do(t, srv, "GET", "/sandboxes/"+id, "", nil)
	n, _ := d["network"].(map[string]any)
	if n["allowOut"] != nil || n["allowPublicTraffic"] != false || len(n["denyOut"].([]any)) != 1 || d["allowInternetAccess"] != nil {
		t.Fatalf("detail after PUT = %v", d)
	}
	for _, tt := range []struct{ name, method, path, body string }{
		{"bad allowOut", "POST", "/v2/sandboxes", `{"templateID":"base","network":{"allowOut":["not a domain!"]}}`},
		{"domain in denyOut", "POST", "/v2/sandboxes", `{"templateID":"base","network":{"denyOut":["example.com"]}}`},
		{"PUT bad cidr", "PUT", "/sandboxes/" + id + "/network", `{"denyOut":["1.2.3.4/99"]}`},
	} {
		if code, e := do(t, srv, tt.method, tt.path, tt.body, nil); code != 400 || e["code"] != float64(400) {
			t.Errorf("%s = %d %v, want 400", tt.name, code, e)
		}
	}
	if code, _ := do(t, srv, "PUT", "/sandboxes/aaaaaaaaaaaaaaaaaaaa/network", `{}`, nil); code != 404 {
		t.Errorf("PUT unknown sandbox = %d", code)
	}
}
