package api_test

import (
	"strings"
	"testing"
	"time"
)

// TestUnknownFieldsIgnored: every route that reads a JSON body takes a field
// it does not know (the next SDK release may add one) as E2B's API does: the
// request is served as if the field were absent.
func TestUnknownFieldsIgnored(t *testing.T) {
	srv, _ := newServer(t)
	code, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","someFutureField":{"x":[1,2]},"privileged":true}`, nil)
	if code != 201 {
		t.Fatalf("create with unknown fields = %d %v, want 201", code, sb)
	}
	id := sb["sandboxID"].(string)
	for _, tt := range []struct {
		name, method, path, body string
		want                     int
	}{
		{"v1 create", "POST", "/sandboxes", `{"templateID":"base","futureV1":1}`, 201},
		{"timeout", "POST", "/sandboxes/" + id + "/timeout", `{"timeout":60,"future":"x"}`, 204},
		{"refresh", "POST", "/sandboxes/" + id + "/refreshes", `{"duration":60,"future":true}`, 204},
		{"connect", "POST", "/v2/sandboxes/" + id + "/connect", `{"timeout":60,"future":[]}`, 200},
		{"network", "PUT", "/sandboxes/" + id + "/network", `{"denyOut":["8.8.8.8"],"allowPublicTraffic":true,"future":1}`, 204},
		// What these answer without the field on a node with no image
		// directory (see TestPersistEndpoints): the field changes nothing.
		{"pause", "POST", "/sandboxes/" + id + "/pause", `{"memory":false,"future":1}`, 501},
		{"fork", "POST", "/sandboxes/" + id + "/fork", `{"count":2,"future":1}`, 501},
		{"snapshot", "POST", "/sandboxes/" + id + "/snapshots", `{"name":"x","future":1}`, 501},
		{"resume", "POST", "/sandboxes/" + id + "/resume", `{"timeout":60,"future":1}`, 409},
	} {
		if code, e := do(t, srv, tt.method, tt.path, tt.body, nil); code != tt.want {
			t.Errorf("%s with an unknown field = %d %v, want %d", tt.name, code, e, tt.want)
		}
	}
}

// TestUnsupportedFieldsNamed: a field E2B defines that sbx cannot honour is
// refused with 400 naming it, never accepted and ignored.
func TestUnsupportedFieldsNamed(t *testing.T) {
	srv, _ := newServer(t)
	for _, tt := range []struct{ field, body string }{
		{"mcp", `{"templateID":"base","mcp":{"exa":{"apiKey":"k"}}}`},
		{"iam", `{"templateID":"base","iam":{"tokens":{"a":{"audience":"x","tokenType":"jwt"}}}}`},
	} {
		code, e := do(t, srv, "POST", "/v2/sandboxes", tt.body, nil)
		msg, _ := e["message"].(string)
		if code != 400 || e["code"] != float64(400) || !strings.Contains(msg, tt.field) {
			t.Errorf("create with %s = %d %v, want 400 naming the field", tt.field, code, e)
		}
	}
	for _, body := range []string{`{"templateID":"base","mcp":null,"iam":null}`, `{"templateID":"base","network":{"httpsPorts":[]}}`} {
		if code, e := do(t, srv, "POST", "/v2/sandboxes", body, nil); code != 201 {
			t.Errorf("create %s = %d %v, want 201 (absent in effect)", body, code, e)
		}
	}
	if code, e := do(t, srv, "POST", "/v2/sandboxes", `{"network":{"rules":{"a.com":[]}}}`, nil); code != 400 || !strings.Contains(e["message"].(string), "allowOut") {
		t.Errorf("create with network.rules outside allowOut = %d %v, want 400 naming allowOut", code, e)
	}
	for _, tt := range []struct{ name, body string }{{"egressProxy", `{"network":{"egressProxy":{"address":"x:1"}}}`}} {
		if code, _ := do(t, srv, "POST", "/v2/sandboxes", tt.body, nil); code != 501 {
			t.Errorf("create with %s = %d, want 501", tt.name, code)
		}
	}
}

// TestSetTimeoutZero: as on E2B, setTimeout(0) is accepted and the sandbox
// times out at once (here: it is killed, so it is gone right after).
func TestSetTimeoutZero(t *testing.T) {
	srv, h := newServer(t)
	for _, tmo := range []string{"0", "-5"} {
		_, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base"}`, nil)
		id := sb["sandboxID"].(string)
		if code, e := do(t, srv, "POST", "/sandboxes/"+id+"/timeout", `{"timeout":`+tmo+`}`, nil); code != 204 {
			t.Fatalf("setTimeout(%s) = %d %v, want 204", tmo, code, e)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			code, _ := do(t, srv, "GET", "/sandboxes/"+id, "", nil)
			if code == 404 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sandbox still there (%d) 5 s after setTimeout(%s)", code, tmo)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if r := h.Residue(); r != "" {
		t.Fatal(r)
	}
}

// TestTimeoutPastMaxClamped: as on E2B, whose KeepAliveFor clamps the
// deadline to the plan's limit, setTimeout and a refresh past the longest
// timeout succeed (204) with the deadline at that limit, never a 400; a
// refresh shorter than E2B's 15 s floor extends by 15 s.
func TestTimeoutPastMaxClamped(t *testing.T) {
	srv, _ := newServer(t) // MaxTimeout 1 h, DefaultTimeout 1 min
	_, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","timeout":30}`, nil)
	id := sb["sandboxID"].(string)
	endIn := func() time.Duration {
		_, info := do(t, srv, "GET", "/sandboxes/"+id, "", nil)
		end, err := time.Parse(time.RFC3339Nano, info["endAt"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return time.Until(end)
	}
	near := func(what string, got, want time.Duration) {
		t.Helper()
		if got > want || got < want-time.Minute {
			t.Errorf("%s: deadline in %v, want about %v", what, got, want)
		}
	}
	for _, tt := range []struct{ path, body string }{
		{"/timeout", `{"timeout":7200}`},
		{"/timeout", `{"timeout":9223372036854775807}`},
		{"/refreshes", `{"duration":86400}`},
	} {
		if code, e := do(t, srv, "POST", "/sandboxes/"+id+tt.path, tt.body, nil); code != 204 {
			t.Fatalf("%s %s = %d %v, want 204", tt.path, tt.body, code, e)
		}
		near(tt.path+" "+tt.body, endIn(), time.Hour)
	}
	if code, e := do(t, srv, "POST", "/sandboxes/"+id+"/timeout", `{"timeout":5}`, nil); code != 204 {
		t.Fatalf("setTimeout(5) = %d %v", code, e)
	}
	for _, body := range []string{`{"duration":1}`, `{"duration":-3}`} {
		if code, e := do(t, srv, "POST", "/sandboxes/"+id+"/refreshes", body, nil); code != 204 {
			t.Fatalf("refresh %s = %d %v, want 204", body, code, e)
		}
		if got := endIn(); got < 14*time.Second || got > 15*time.Second {
			t.Errorf("refresh %s: deadline in %v, want 15 s", body, got)
		}
	}
}
