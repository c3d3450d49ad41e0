package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// call is one raw REST call with explicit headers: status, headers, body.
func (d *daemon) call(method, path string, hdr map[string]string, body any) (int, http.Header, []byte) {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.url+path, rd)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// as does one call with an API key and decodes a 2xx answer into out.
func (d *daemon) as(key, method, path string, body, out any) int {
	d.t.Helper()
	code, _, b := d.call(method, path, map[string]string{"X-API-Key": key}, body)
	if out != nil && code/100 == 2 && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			d.t.Fatalf("%s %s: decode %q: %v", method, path, b, err)
		}
	}
	return code
}

// team is a team created with the admin key, and its first key.
type team struct {
	ID  string `json:"teamID"`
	Key string `json:"apiKey"`
}

func (d *daemon) newTeam(name string, quota map[string]any) team {
	d.t.Helper()
	var tm team
	body := map[string]any{"name": name}
	if quota != nil {
		body["quota"] = quota
	}
	if code := d.as(apiKey, "POST", "/sbx/teams", body, &tm); code != 201 || tm.Key == "" {
		d.t.Fatalf("create team %s: %d %+v", name, code, tm)
	}
	return tm
}

// createAs creates a base sandbox with key and registers its removal.
func (d *daemon) createAs(key string, body map[string]any) *sandbox {
	d.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if _, ok := body["templateID"]; !ok {
		body["templateID"] = "base"
	}
	sb := &sandbox{d: d}
	if code, _, b := d.call("POST", "/v2/sandboxes", map[string]string{"X-API-Key": key}, body); code != 201 {
		d.t.Fatalf("create: %d %s", code, b)
	} else if err := json.Unmarshal(b, sb); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { d.deleteAs(key, sb.ID) })
	return sb
}

// deleteAs removes a sandbox with key if its daemon is still up (cleanup).
func (d *daemon) deleteAs(key, id string) {
	req, _ := http.NewRequest("DELETE", d.url+"/sandboxes/"+id, nil)
	req.Header.Set("X-API-Key", key)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

// fill replaces the {name} wildcards of a route path with vals (a missing
// one is a test bug).
func fill(t *testing.T, path string, vals map[string]string) string {
	t.Helper()
	for {
		i := strings.Index(path, "{")
		if i < 0 {
			return path
		}
		j := strings.Index(path[i:], "}") + i
		name := strings.TrimSuffix(path[i+1:j], "...")
		v, ok := vals[name]
		if !ok {
			t.Fatalf("route %s: no value for {%s}: add it to the test's table", path, name)
		}
		path = path[:i] + v + path[j+1:]
	}
}
