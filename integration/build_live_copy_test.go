package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildSwapper is a RUN step that leaves a process behind which keeps
// swapping (renameat2 RENAME_EXCHANGE) directories of the layer with
// symlinks to a host directory: a copy of the layer made while it runs
// resolves some paths through the links, on the host.
const buildSwapper = `set -e; mkdir -p /sbx-race; cd /sbx-race
for i in $(seq 0 15); do mkdir -p x$i/secret; echo decoy > x$i/secret/canary.txt; ln -s %s y$i; done
cat > /sbx-race/swap.py <<'PY'
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
while True:
    for i in range(16):
        libc.renameat2(-100, b"/sbx-race/x%%d" %% i, -100, b"/sbx-race/y%%d" %% i, 2)
    time.sleep(0.0004)
PY
setsid python3 /sbx-race/swap.py </dev/null >/dev/null 2>&1 &
sleep 0.5 # %s`

// A build step's files are copied into its layer by the daemon (host
// root): a process the step left running must not be able to turn parts of
// that copy into reads of the host's files. Before, the copy (cp -a) ran on
// the live layer and followed a directory the step swapped for a symlink to
// a host directory, committing the host's file into the template.
func TestBuildCopyNotLive(t *testing.T) {
	for _, rt := range []string{"crun", "runsc"} {
		t.Run(rt, func(t *testing.T) { buildCopyNotLive(t, rt) })
	}
}

func buildCopyNotLive(t *testing.T, rt string) {
	_, templates := requirements(t, rt)
	d := startDaemon(t, rt, "")
	host := filepath.Join(t.TempDir(), "host")
	canary := make([]byte, 12)
	_, _ = rand.Read(canary)
	secret := "host-canary-" + hex.EncodeToString(canary)
	if err := os.MkdirAll(filepath.Join(host, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "secret", "canary.txt"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(templates, "layers", "*"))
	for try := range 8 {
		run := fmt.Sprintf(buildSwapper, host, strconv.FormatInt(time.Now().UnixNano(), 36)) // never cached
		name := "it-livecopy-" + rt + strconv.Itoa(try)
		tid, bid := d.startBuild(t, name, map[string]any{"fromTemplate": "base",
			"steps": []map[string]any{{"type": "RUN", "args": []string{run, "root"}}}})
		st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
		leaked := leakedCanary(templates, before, secret)
		d.api("DELETE", "/templates/"+tid, nil, nil)
		if len(leaked) > 0 {
			t.Fatalf("try %d (build %s): the host's file is in the template's layer: %v", try, st.Status, leaked)
		}
		t.Logf("try %d: build %s, no host file in its layers", try, st.Status)
	}
}

// leakedCanary lists files of layers made since before that hold secret,
// as files of the layer (not through one of its symlinks).
func leakedCanary(templates string, before []string, secret string) []string {
	var out []string
	found, _ := filepath.Glob(filepath.Join(templates, "layers", "*", "*", "*", "sbx-race", "*", "secret", "canary.txt"))
	for _, f := range found {
		layer := filepath.Join(templates, "layers", strings.Split(strings.TrimPrefix(f, filepath.Join(templates, "layers")+"/"), "/")[0])
		if real, err := filepath.EvalSymlinks(f); slices.Contains(before, layer) || err != nil || real != f {
			continue // an old layer, or reached through a link the step made (to the host: not a copy)
		}
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(secret)) {
			out = append(out, f)
		}
	}
	return out
}
