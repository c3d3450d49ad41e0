package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// TestClusterTemplateRegistry: a template built on node 1 is pushed to a
// real OCI registry (Debian's docker-registry); node 2, on the same
// PostgreSQL but with an empty templates dir, pulls the build's layers on
// the first create and runs it. With the registry down, that create is a
// 503 naming the registry and leaves no partial layer; once pulled, creates
// on node 2 no longer need the registry.
func TestClusterTemplateRegistry(t *testing.T) {
	requirements(t, "runsc")
	reg := startRegistry(t)
	url := pgtest.URL(t)
	repo := reg.addr + "/sbx/templates"
	flags := []string{"--template-registry", repo, "--template-registry-insecure"}
	n1 := startClusterNode(t, "runsc", url, 1, "", append(flags, "--templates-dir", baseCopy(t), "--pool", "base=1")...)
	tdir2 := filepath.Join(t.TempDir(), "templates")
	n2 := startClusterNode(t, "runsc", url, 2, "", append(flags, "--templates-dir", tdir2)...)

	tid, bid := n1.startBuild(t, "it-dist", map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"echo pulled > /marker", "root"}}}})
	st := n1.waitStatus(t, tid, bid, 5*time.Minute, func(s buildStatus) bool { return s.Status != "building" && s.Status != "waiting" })
	if st.Status != "ready" || !logHas(st, "pushed to the template registry") {
		t.Fatalf("build: %+v", st)
	}
	admin := openAdmin(t, url)
	if b, err := admin.Build(context.Background(), bid); err != nil || !strings.HasPrefix(b.Digest, "sha256:") {
		t.Fatalf("build record: %+v %v, want the pushed digest (other nodes pull by it)", b, err)
	}
	// the nodes' reports, which placement reads: node 1 holds the template,
	// both can pull it
	waitCached(t, admin, "node1", "it-dist", true)
	waitCached(t, admin, "node2", "it-dist", false)
	waitNode(t, admin, "node1", "a warm base sandbox on its default runtime", func(n *store.Node) bool {
		return n.DefaultRuntime == "runsc" && n.Warm["base:runsc"] >= 1
	})

	reg.stop()
	var e struct{ Message string }
	if code := n2.api("POST", "/v2/sandboxes", map[string]any{"templateID": "it-dist"}, &e); code != 503 || !strings.Contains(e.Message, repo) {
		t.Fatalf("create with the registry down: %d %q, want 503 naming %s", code, e.Message, repo)
	}
	if tmp, _ := filepath.Glob(filepath.Join(tdir2, "layers", ".tmp-*")); len(tmp) > 0 {
		t.Fatalf("partial layers left: %v", tmp)
	}

	reg.restart()
	t0 := time.Now()
	sb := n2.create(map[string]any{"templateID": "it-dist", "timeout": 120})
	t.Logf("first create on node 2 (pull of %s) took %v", tid, time.Since(t0).Round(time.Millisecond))
	if out, code := sb.run("", "cat /marker", 20*time.Second); code != 0 || out != "pulled\n" {
		t.Fatalf("run in the pulled template: %q %d", out, code)
	}
	ls, _ := os.ReadDir(filepath.Join(tdir2, "layers"))
	if len(ls) < 2 {
		t.Fatalf("node 2's layer store: %v", ls)
	}
	waitCached(t, admin, "node2", "it-dist", true)

	reg.stop()
	t0 = time.Now()
	sb2 := n2.create(map[string]any{"templateID": "it-dist", "timeout": 120})
	t.Logf("second create on node 2 (local) took %v", time.Since(t0).Round(time.Millisecond))
	if out, code := sb2.run("", "cat /marker", 20*time.Second); code != 0 || out != "pulled\n" {
		t.Fatalf("second create: %q %d", out, code)
	}
}

// baseCopy is a templates dir of its own holding the base template, its
// layers hardlinked from the shared one (the builds and pushes of this
// test write into it, never into the shared dir).
func baseCopy(t *testing.T) string {
	t.Helper()
	_, src := requirements(t, "runsc")
	b, err := os.ReadFile(filepath.Join(src, "base", "template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var bt struct{ Layers []string }
	if err := json.Unmarshal(b, &bt); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "templates")
	cmds := [][]string{{"mkdir", "-p", filepath.Join(dst, "layers")}, {"cp", "-a", filepath.Join(src, "base"), dst}}
	for _, id := range bt.Layers {
		l, sl := filepath.Join(dst, "layers", id), filepath.Join(src, "layers", id)
		cmds = append(cmds, []string{"mkdir", l}, []string{"cp", "-al", filepath.Join(sl, "r"), l}, []string{"cp", filepath.Join(sl, "size"), l})
	}
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", c, err, out)
		}
	}
	return dst
}

// waitCached waits (a few heartbeats) until node's registry record lists
// tmpl among its cached user templates (or not, for want false) and says
// it pulls from the template registry.
func waitCached(t *testing.T, st *store.Store, node, tmpl string, want bool) {
	t.Helper()
	waitNode(t, st, node, fmt.Sprintf("%s cached = %v and pulls", tmpl, want), func(n *store.Node) bool {
		return n.Pulls && slices.Contains(n.Cached, tmpl) == want
	})
}

// waitNode waits (up to a minute: a pool may still be filling) until
// node's registry record satisfies ok.
func waitNode(t *testing.T, st *store.Store, node, what string, ok func(*store.Node) bool) {
	t.Helper()
	pollNodes(t, st, time.Minute, node+": "+what, func(byID map[string]*store.Node) bool {
		return byID[node] != nil && ok(byID[node])
	})
}
