package main

import (
	"context"
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
