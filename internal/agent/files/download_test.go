package files

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDownload(t *testing.T) {
	e := newEnv(t)
	must(t, os.WriteFile(filepath.Join(e.home, "a.txt"), []byte("hello"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.home, "empty"), nil, 0o644))
	must(t, os.Symlink("/", filepath.Join(e.home, "root")))
	tests := []struct {
		name, query string
		hdr         map[string]string
		status      int
		body        string
		encoding    string
	}{
		{"relative", "path=a.txt", nil, 200, "hello", ""},
		{"tilde", "path=~/a.txt", nil, 200, "hello", ""},
		{"username", "path=a.txt&username=user", nil, 200, "hello", ""},
		{"empty file", "path=empty", nil, 200, "", ""},
		{"gzip", "path=a.txt", map[string]string{"Accept-Encoding": "gzip"}, 200, "hello", "gzip"},
		{"gzip preferred", "path=a.txt", map[string]string{"Accept-Encoding": "identity;q=0.5, gzip"}, 200, "hello", "gzip"},
		{"br falls back to identity", "path=a.txt", map[string]string{"Accept-Encoding": "br"}, 200, "hello", ""},
		{"nothing acceptable", "path=a.txt", map[string]string{"Accept-Encoding": "br, identity;q=0"}, 406, "", ""},
		{"symlink to root", "path=root/etc/hostname", nil, 200, "", "skip-body"},
		{"directory", "path=~", nil, 400, "", ""},
		{"missing", "path=nope", nil, 404, "", ""},
		{"empty path", "path=", nil, 400, "", ""},
		{"nul", "path=a%00b", nil, 400, "", ""},
		{"long", "path=" + strings.Repeat("a", 5000), nil, 400, "", ""},
		{"unknown user", "path=a.txt&username=nobody", nil, 401, "", ""},
		{"empty username", "path=a.txt&username=", nil, 401, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := do(t, "GET", e.url+"/files?"+tt.query, tt.hdr, nil)
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, body, tt.status)
			}
			if status != 200 {
				if !bytes.Contains(body, []byte(`"message"`)) || h.Get("Content-Type") != "application/json" {
					t.Fatalf("error body %q", body)
				}
				return
			}
			if tt.encoding == "skip-body" {
				return
			}
			if h.Get("Content-Encoding") != tt.encoding {
				t.Fatalf("encoding %q", h.Get("Content-Encoding"))
			}
			if tt.encoding == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				must(t, err)
				body, err = io.ReadAll(zr)
				must(t, err)
			} else if h.Get("Content-Length") != "" && h.Get("Content-Length") != strconv.Itoa(len(tt.body)) {
				t.Fatalf("Content-Length %q", h.Get("Content-Length"))
			}
			if string(body) != tt.body {
				t.Fatalf("body %q", body)
			}
		})
	}
	_, h, _ := do(t, "GET", e.url+"/files?path=empty", nil, nil)
	if h.Get("Content-Length") != "0" {
		t.Fatalf("empty file Content-Length %q", h.Get("Content-Length"))
	}
}
