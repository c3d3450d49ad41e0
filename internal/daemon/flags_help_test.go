package daemon

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// TestServeHelpArgNames: every flag in sbx serve --help is "-name" and at
// most its type: a `quoted` word in a usage becomes the argument's name
// (flag.UnquoteUsage), and "-template-registry docker login" once read as if
// the flag took "docker login".
func TestServeHelpArgNames(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	_, err = ParseFlags([]string{"-h"})
	os.Stderr = stderr
	w.Close()
	out, _ := io.ReadAll(r)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("ParseFlags(-h) = %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "  -") && len(strings.Fields(line)) > 2 {
			t.Errorf("flag line with more than a name and a type: %q", line)
		}
	}
}
