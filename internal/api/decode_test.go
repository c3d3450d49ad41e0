package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecodeCreate: decode answers only 400 or 413, and (forward
// compatibility) accepts a create body exactly when encoding/json does, which
// ignores members it does not know: unknown fields never cause a refusal.
func FuzzDecodeCreate(f *testing.F) {
	for _, s := range []string{`{"templateID":"base","timeout":10}`, `{"network":{"allowOut":["x"]}}`, `{`, `[]`, `{"a":1}`, ``,
		`{"templateID":"base","future":{"nested":[1,{"x":null}]}}`, `{"network":{"future":true}}`, `{"templateID":"base"} x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v2/sandboxes", strings.NewReader(body))
		var req newSandbox
		ok := decode(w, r, &req)
		if !ok && w.Code != 400 && w.Code != 413 {
			t.Fatalf("decode refused with status %d", w.Code)
		}
		if len(body) >= maxBody || len(bytes.TrimSpace([]byte(body))) == 0 {
			return
		}
		var ref newSandbox
		if want := json.Unmarshal([]byte(body), &ref) == nil; ok != want {
			t.Fatalf("decode ok=%v but encoding/json ok=%v for %q (%s)", ok, want, body, w.Body)
		}
	})
}
