package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/client/clienttest"
)

func TestDetachReader(t *testing.T) {
	tests := []struct {
		in, out  string
		detached bool
	}{
		{"ls\r", "ls\r", false},
		{"a\x10\x11b", "a", true},
		{"a\x10b", "a\x10b", false},
		{"\x10\x10\x11", "\x10", true},
		{"x\x10", "x", false}, // a partial match still held at EOF is dropped
	}
	for _, tt := range tests {
		detached := false
		r := &detachReader{r: strings.NewReader(tt.in), keys: detachKeys, detach: func() { detached = true }}
		got, _ := io.ReadAll(r)
		if want := tt.out; string(got) != want || detached != tt.detached {
			t.Errorf("%q: got %q detached=%v; want %q detached=%v", tt.in, got, detached, tt.out, tt.detached)
		}
	}
}

// TestUntarStaysInside: entries that would land outside the destination
// (.., absolute, through a symlink) fail the copy and write nothing outside.
func TestUntarStaysInside(t *testing.T) {
	tests := []struct {
		name    string
		entries []tar.Header
	}{
		{"dotdot", []tar.Header{{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644}}},
		{"symlink escape", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: ".."}, {Name: "l/evil", Typeflag: tar.TypeReg, Mode: 0o644}}},
		{"absolute link", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/tmp"}, {Name: "l/evil", Typeflag: tar.TypeReg, Mode: 0o644}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, h := range tt.entries {
				h := h
				if err := tw.WriteHeader(&h); err != nil {
					t.Fatal(err)
				}
			}
			tw.Close()
			if err := untar(&buf, dst); err == nil {
				t.Fatal("escaping entry unpacked without error")
			}
			if _, err := os.Stat(filepath.Join(parent, "evil")); err == nil {
				t.Fatal("file written outside the destination")
			}
		})
	}
}

// TestEOTAtEOF: piped input into a shell's terminal ends with one Ctrl-D,
// so the shell exits when the input does.
func TestEOTAtEOF(t *testing.T) {
	got, err := io.ReadAll(&eotAtEOF{r: strings.NewReader("echo hi\n")})
	if err != nil || string(got) != "echo hi\n\x04" {
		t.Errorf("got %q, %v; want the input and one EOT", got, err)
	}
	if isTerminal(strings.NewReader("")) {
		t.Error("a reader is not a terminal")
	}
}

// TestShellSessionCut: a sandbox killed under a shell cuts its stream; the
// CLI says the session ended, not "protocol error: incomplete envelope",
// and exits non-zero.
func TestShellSessionCut(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	srv.Add(&clienttest.Sandbox{ID: "aaaaaaaaaaaaaaaaaaaa", TemplateID: "base"})
	srv.Exec = func(ctx context.Context, p *clienttest.Proc) int {
		fmt.Fprint(p.Stdout, "$ ")
		panic(http.ErrAbortHandler) // the connection drops mid-stream
	}
	for _, args := range [][]string{{"shell", "aaaaaaaaaaaaaaaaaaaa"}, {"exec", "aaaaaaaaaaaaaaaaaaaa", "--", "sleep"}} {
		code, _, errOut := runAt(t, srv.URL, testKey, args...)
		if code != exitInfra || !strings.Contains(errOut, "session ended") || strings.Contains(errOut, "envelope") {
			t.Errorf("%v: exit %d, stderr %q; want %d and the session ended", args, code, errOut, exitInfra)
		}
	}
}
