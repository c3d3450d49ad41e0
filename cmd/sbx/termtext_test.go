package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/sbx-dev/sbx/client/clienttest"
)

// hostile is what a sandbox (its root can replace tar) or a team's other
// key holder writes to reach the operator's terminal: an OSC 52 clipboard
// write, a screen clear and a carriage return.
const hostile = "a\x1b]52;c;cHduZWQ=\x07b\x1b[2J\rc\u009b1m"

// controlIn is the first control character of s other than newline (and
// tab when tabs are allowed), or -1.
func controlIn(s string, tabs bool) int {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && r != '\n' && (!tabs || r != '\t')
	})
}

// What the CLI prints that a sandbox or another key holder wrote is text:
// an error carrying the sandbox's tar's stderr (`sbx cp`) and metadata in
// `sbx ls` reach the terminal without their escape sequences (before,
// both were printed as received).
func TestCLIPrintsHostileTextAsText(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	srv.Add(&clienttest.Sandbox{ID: "aaaaaaaaaaaaaaaaaaaa", TemplateID: "base", Metadata: map[string]string{"k": hostile},
		StartedAt: time.Now(), EndAt: time.Now().Add(time.Hour), Files: map[string][]byte{"/d/f": []byte("x")}})
	srv.Exec = func(ctx context.Context, p *clienttest.Proc) int {
		_, _ = p.Stderr.Write([]byte("tar: " + hostile + "\n"))
		return 2
	}
	code, _, stderr := cli(t, context.Background(), srv, "cp", "", "aaaaaaaaaaaaaaaaaaaa:/d", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "52;c;") {
		t.Fatalf("cp: exit %d, stderr %q: want the tar's failure", code, stderr)
	}
	if i := controlIn(stderr, true); i >= 0 {
		t.Errorf("cp's error holds control character %q: %q", stderr[i], stderr)
	}
	code, out, _ := cli(t, context.Background(), srv, "ls", "")
	if code != 0 || !strings.Contains(out, "52;c;") {
		t.Fatalf("ls: exit %d, %q", code, out)
	}
	if i := controlIn(out, true); i >= 0 {
		t.Errorf("ls prints control character %q: %q", out[i], out)
	}
}

// TestKeysLsPrintsNamesAsText: an API key's name is any text another key of
// the team chose (1-128 characters); keys ls and teams ls print names as
// text. Before, a key named with an OSC 52 wrote the clipboard of whoever
// listed the team's keys, and a CSI cleared their screen.
func TestKeysLsPrintsNamesAsText(t *testing.T) {
	name, _ := json.Marshal(hostile)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api-keys", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[{"id":"k1","name":` + string(name) + `,"mask":{"prefix":"e2b_","maskedValueSuffix":"abcd"},"createdAt":"2026-01-02T03:04:05Z","lastUsed":null}]`))
	})
	mux.HandleFunc("GET /sbx/teams", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[{"teamID":"t1","name":` + string(name) + `,"createdAt":"2026-01-02T03:04:05Z","keys":1,"owns":{}}]`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, args := range [][]string{{"keys", "ls"}, {"teams", "ls"}} {
		code, out, _ := runAt(t, srv.URL, testKey, args...)
		if code != 0 || !strings.Contains(out, "52;c;") {
			t.Fatalf("%v: exit %d, %q", args, code, out)
		}
		if i := controlIn(out, true); i >= 0 {
			t.Errorf("%v prints control character %q: %q", args, out[i], out)
		}
	}
}

// TestHostileServerAsText: every string the CLI prints in a table or a log
// line comes from the server, which the CLI treats as it treats a sandbox:
// `sbx ls` (id, template, state), `sbx logs` (message, level) and `sbx
// template ls` (id, names, status) print no control character of what was
// sent. Before, only metadata (ls) and fields (logs) were made text; the
// rest reached the terminal as received, so a hostile or intercepted
// daemon (plain HTTP) wrote the operator's clipboard with an OSC 52.
func TestHostileServerAsText(t *testing.T) {
	h, _ := json.Marshal(hostile)
	s := string(h)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/sandboxes", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[{"sandboxID":` + s + `,"templateID":` + s + `,"state":` + s +
			`,"startedAt":"2026-01-02T03:04:05Z","endAt":"2036-01-02T03:04:05Z","metadata":{}}]`))
	})
	mux.HandleFunc("GET /v2/sandboxes/{id}/logs", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"logs":[{"timestamp":"2026-01-02T03:04:05Z","level":` + s + `,"message":` + s + `,"fields":{}}]}`))
	})
	mux.HandleFunc("GET /templates", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[{"templateID":` + s + `,"names":[` + s + `],"buildStatus":` + s + `}]`))
	})
	mux.HandleFunc("POST /api-keys", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":` + s + `,"name":` + s + `,"key":` + s + `,"mask":{"prefix":` + s + `,"maskedValueSuffix":` + s + `},"createdAt":"2026-01-02T03:04:05Z"}`))
	})
	mux.HandleFunc("POST /sbx/teams", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"teamID":` + s + `,"name":` + s + `,"apiKey":` + s + `,"createdAt":"2026-01-02T03:04:05Z"}`))
	})
	mux.HandleFunc("GET /sbx/version", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"version":` + s + `,"commit":` + s + `,"goVersion":` + s + `,"platform":` + s + `}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, args := range [][]string{{"ls"}, {"logs", "aaaaaaaaaaaaaaaaaaaa"}, {"template", "ls"}, {"version"}, {"keys", "create", "k"}, {"teams", "create", "t"}} {
		code, out, stderr := runAt(t, srv.URL, testKey, args...)
		if code != 0 || !strings.Contains(out, "52;c;") {
			t.Fatalf("%v: exit %d, %q, stderr %q", args, code, out, stderr)
		}
		if i := controlIn(out+stderr, true); i >= 0 {
			t.Errorf("%v prints control character %q: %q %q", args, (out + stderr)[i], out, stderr)
		}
	}
}
