package oci

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimRefusesState: claim takes a free id (its bundle directory) and
// refuses, leaving no bundle behind, an id with runtime state under --root:
// a directory (crun, runc) or runsc's <id>_sandbox:<id> files; a runsc file
// pattern means nothing under crun's root.
func TestClaimRefusesState(t *testing.T) {
	for _, c := range []struct {
		kind, state string // state: what --root holds for the id ("" none)
		taken       bool
	}{
		{"crun", "", false},
		{"crun", "ID/", true},
		{"crun", "ID_sandbox:ID.state", false},
		{"runc", "ID/", true},
		{"runsc", "ID_sandbox:ID.state", true},
		{"runsc", "", false},
	} {
		dir := t.TempDir()
		r := &Runtime{kind: c.kind, cfg: Config{StateDir: dir}, root: filepath.Join(dir, c.kind)}
		const id = "claimtestaaaaaaaaaaa"
		if err := os.MkdirAll(r.root, 0o700); err != nil {
			t.Fatal(err)
		}
		if st := strings.ReplaceAll(c.state, "ID", id); strings.HasSuffix(st, "/") {
			_ = os.Mkdir(filepath.Join(r.root, st), 0o700)
		} else if st != "" {
			_ = os.WriteFile(filepath.Join(r.root, st), nil, 0o600)
		}
		err := r.claim(id)
		_, statErr := os.Stat(r.bundle(id))
		if taken := errors.Is(err, fs.ErrExist); taken != c.taken || (statErr == nil) == taken {
			t.Errorf("%s with %q: claim = %v, bundle left: %v; want taken %v", c.kind, c.state, err, statErr == nil, c.taken)
		}
	}
}
