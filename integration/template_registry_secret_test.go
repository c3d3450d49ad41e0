package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBuildRegistryPasswordNotStored: a build's registry credentials
// (fromImageRegistry) are used for its pull and never written to the
// database (the build record keeps its spec without them), nor to its log.
func TestBuildRegistryPasswordNotStored(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	const pw = "registry-password-canary-7f3a"
	tid, bid := d.startBuild(t, "regpw", map[string]any{"fromImage": "127.0.0.1:1/none:latest",
		"fromImageRegistry": map[string]any{"type": "registry", "username": "u", "password": pw}})
	d.waitStatus(t, tid, bid, 60*time.Second, func(st buildStatus) bool { return st.Status == "error" })
	_ = filepath.Walk(d.dataDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(pw)) {
			t.Errorf("%s holds the registry password", p)
		}
		return nil
	})
}
