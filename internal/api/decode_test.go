package api

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func FuzzDecodeCreate(f *testing.F) {
	for _, s := range []string{`{"templateID":"base","timeout":10}`, `{"network":{"allowOut":["x"]}}`, `{`, `[]`, `{"a":1}`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v2/sandboxes", strings.NewReader(body))
		var req newSandbox
		if ok := decode(w, r, &req); !ok && w.Code != 400 && w.Code != 413 {
			t.Fatalf("decode refused with status %d", w.Code)
		}
	})
}
