package identity

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestUnknownUserIsEnvds: a missing user is ErrUnknownUser with envd's
// words, which E2B's runCmd.test.ts shows through a build's error ("command
// failed: unauthenticated: invalid username: 'root123'"); before, sbx said
// `unknown user: "root123"`.
func TestUnknownUserIsEnvds(t *testing.T) {
	dir := t.TempDir()
	f := Files{Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group")}
	if err := os.WriteFile(f.Passwd, []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Group, []byte("root:x:0:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.Lookup("root123")
	if !errors.Is(err, ErrUnknownUser) || err.Error() != "invalid username: 'root123'" {
		t.Fatalf("Lookup(root123) = %v, want envd's invalid username: 'root123'", err)
	}
	if u, err := f.Lookup("root"); err != nil || u.UID != 0 {
		t.Fatalf("Lookup(root) = %+v, %v", u, err)
	}
}
