package api_test

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

// TestRequestTextNotEchoed: a value of the request that fails validation is
// quoted in the 400's message and the daemon's log by at most 64 characters,
// and no message is longer than 1 KiB. Before, a create's runtime, allowOut
// or denyOut entry and a tag of up to the 1 MiB body came back whole in the
// answer, and the runtime's also went whole into the daemon's warning
// "create failed": one team key at its API rate wrote ~180 MB of the node's
// log a second (35 MB from 40 requests of 900 KB, measured on a daemon).
func TestRequestTextNotEchoed(t *testing.T) {
	var logs lockedBuffer
	a, _ := newAPILogged(t, nil, nil, &logs)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	tsrv := newTemplateServer(t)
	big := strings.Repeat("z", 256<<10)
	for _, tc := range []struct {
		name, method, path, body string
		srv                      *httptest.Server
	}{
		{"runtime", "POST", "/v2/sandboxes", `{"templateID":"base","runtime":"` + big + `"}`, srv},
		{"allowOut", "POST", "/v2/sandboxes", `{"templateID":"base","network":{"allowOut":["` + big + `"]}}`, srv},
		{"denyOut", "POST", "/v2/sandboxes", `{"templateID":"base","network":{"denyOut":["` + big + `"]}}`, srv},
		{"assigned tag", "POST", "/templates/tags", `{"target":"base","tags":["` + big + `"]}`, tsrv},
		{"removed tag", "DELETE", "/templates/tags", `{"name":"base","tags":["` + big + `"]}`, tsrv},
		{"build tag", "POST", "/v3/templates", `{"name":"mine","tags":["` + big + `"]}`, tsrv},
	} {
		before := logs.Len()
		code, e := do(t, tc.srv, tc.method, tc.path, tc.body, nil)
		m, _ := e["message"].(string)
		if code != 400 || m == "" {
			t.Errorf("%s: %d %.200v, want a 400 {code, message}", tc.name, code, e)
		}
		if len(m) > 1024 || strings.Contains(m, strings.Repeat("z", 65)) {
			t.Errorf("%s: a %d-byte message echoes the request: %.200s…", tc.name, len(m), m)
		}
		if n := logs.Len() - before; n > 8<<10 {
			t.Errorf("%s: the daemon's log grew %d bytes", tc.name, n)
		}
	}
}
