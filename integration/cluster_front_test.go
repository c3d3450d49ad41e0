package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// startFront runs `sbx serve --role api` on url; its daemon value drives
// the front like a node (api, create, run through it).
func startFront(t *testing.T, url string, extra ...string) *daemon {
	t.Helper()
	sbxBin, _ := requirements(t)
	addr := freeAddr(t)
	d := &daemon{t: t, url: "http://" + addr, log: &syncBuffer{}, exited: make(chan struct{})}
	d.args = append([]string{"serve", "--role", "api", "--cluster", url, "--listen", addr}, extra...)
	d.cmd = exec.Command(sbxBin, d.args...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() { d.stop(syscall.SIGTERM) })
	if err := d.waitHealthy(); err != nil {
		t.Fatalf("%v:\n%s", err, d.log)
	}
	return d
}

// TestClusterFront: an API front over two node daemons on one PostgreSQL,
// all given the cluster secret. Creates through it land on both nodes;
// each sandbox's API calls and traffic reach its node through the front;
// the list joins both nodes; a node refuses a request that did not come
// through the front, key or not; after kill -9 of a node its sandboxes
// answer 404 through the front and creates keep succeeding on the other.
func TestClusterFront(t *testing.T) {
	requirements(t, "crun")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	secret := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(secret, []byte("an-integration-test-cluster-secret-of-40b"), 0o600); err != nil {
		t.Fatal(err)
	}
	n1 := startClusterNode(t, "crun", url, 1, "", "--cluster-secret-file", secret)
	startClusterNode(t, "crun", url, 2, "", "--cluster-secret-file", secret)
	waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})
	time.Sleep(clusterTTL / 2) // a heartbeat: reports with runtimes
	fr := startFront(t, url, "--cluster-secret-file", secret)

	var sbs []*sandbox
	on := map[string][]*sandbox{}
	for range 6 {
		sb := fr.create(map[string]any{"timeout": 300})
		node, _, err := admin.SandboxOwner(context.Background(), sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		sbs, on[node] = append(sbs, sb), append(on[node], sb)
	}
	if len(on["node1"]) == 0 || len(on["node2"]) == 0 {
		t.Fatalf("6 creates through the front placed %d on node1, %d on node2", len(on["node1"]), len(on["node2"]))
	}
	t.Logf("placed %d on node1, %d on node2", len(on["node1"]), len(on["node2"]))
	for _, node := range []string{"node1", "node2"} {
		if out, code := on[node][0].run("", "echo via-front", 10*time.Second); code != 0 || out != "via-front\n" {
			t.Fatalf("command through the front on %s: %q %d", node, out, code)
		}
	}
	if code := n1.api("GET", "/sandboxes", nil, nil); code != 401 {
		t.Fatalf("a request with the key straight to a node: %d, want 401 (only the front's are signed)", code)
	}
	if _, code, err := sbs[0].runErrVia(n1.url, "echo x"); err == nil || code == 0 {
		t.Fatalf("sandbox traffic straight to a node was served")
	}
	var list []map[string]any
	if code := fr.api("GET", "/sandboxes", nil, &list); code != 200 || len(list) != len(sbs) {
		t.Fatalf("list through the front: %d, %d sandboxes, want %d", code, len(list), len(sbs))
	}
	gone := on["node2"][0]
	if code := fr.api("DELETE", "/sandboxes/"+gone.ID, nil, nil); code != 204 {
		t.Fatalf("kill through the front: %d", code)
	}
	if code := fr.api("GET", "/sandboxes/"+gone.ID, nil, nil); code != 404 {
		t.Fatalf("killed sandbox through the front: %d, want 404", code)
	}

	n1.stop(syscall.SIGKILL)
	waitNodes(t, admin, map[string]string{"node1": "expired"})
	if code := fr.api("GET", "/sandboxes/"+on["node1"][0].ID, nil, nil); code != 404 {
		t.Fatalf("a lost node's sandbox through the front: %d, want 404", code)
	}
	for range 2 {
		sb := fr.create(nil)
		if node, _, _ := admin.SandboxOwner(context.Background(), sb.ID); node != "node2" {
			t.Fatalf("create after node1's loss placed on %q", node)
		}
	}
}

// runErrVia runs cmd in s through the origin at url instead of its daemon's.
func (s *sandbox) runErrVia(url, cmd string) (string, int, error) {
	via := &sandbox{d: &daemon{t: s.d.t, url: url}, ID: s.ID, Token: s.Token}
	return via.runErr("", cmd, 5*time.Second)
}
