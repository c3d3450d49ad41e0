package oci

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaiseHostFileMax: fs.file-max goes to LONG_MAX and stays there.
func TestRaiseHostFileMax(t *testing.T) {
	old := fileMax
	fileMax = filepath.Join(t.TempDir(), "file-max")
	t.Cleanup(func() { fileMax = old })
	for _, cur := range []string{"2466186\n", "9223372036854775807\n"} {
		if err := os.WriteFile(fileMax, []byte(cur), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := raiseHostFileMax(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(fileMax); strings.TrimSpace(string(b)) != "9223372036854775807" {
			t.Errorf("from %q: file-max %q", cur, b)
		}
	}
}
