package integration

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// TestClusterSharedPause (runsc): two nodes and a front on one PostgreSQL,
// the nodes sharing a --shared-dir. A sandbox paused on node1 (its memory
// checkpoint written to the shared dir) survives kill -9 of node1: its
// record stays paused, and a connect through the front resumes it on
// node2 with its files and a running process's memory intact; another,
// with autoResume, is resumed on node2 by its traffic alone. Before that,
// node2 takes both over by itself and the front lists them. A snapshot
// made on node1 starts sandboxes on node2 (node1 dead). node1, restarted, does not
// have the sandbox. Then fencing: the sandbox paused on node2, node2
// frozen past its lease, node1 resumes it; node2, thawed, is refused and
// exits, and restarted does not keep it.
func TestClusterSharedPause(t *testing.T) {
	requirements(t, "runsc")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	shared := t.TempDir()
	n1 := startClusterNode(t, "runsc", url, 1, "", "--shared-dir", shared)
	n2 := startClusterNode(t, "runsc", url, 2, "", "--shared-dir", shared)
	nodes := waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})
	if s := nodes["node1"].Storage; s == "" || s != nodes["node2"].Storage {
		t.Fatalf("nodes report storage %q and %q, want one id", s, nodes["node2"].Storage)
	}
	time.Sleep(clusterTTL / 2) // a heartbeat: reports with runtimes
	fr := startFront(t, url)

	sb := n1.create(map[string]any{"timeout": 300})
	sb.d = fr // from here on, through the front
	sb.run("", "echo kept > /home/user/f", 20*time.Second)
	before := startCounter(t, sb)
	snapOnDeadNode(t, fr, sb)
	auto := n1.create(map[string]any{"timeout": 300, "autoResume": map[string]bool{"enabled": true}})
	auto.d = fr
	auto.run("", "echo auto > /home/user/a", 20*time.Second)
	for _, id := range []string{sb.ID, auto.ID} {
		if code := fr.api("POST", "/sandboxes/"+id+"/pause", nil, nil); code != 204 {
			t.Fatalf("pause through the front: %d\n%s", code, tail(n1.log.String(), 2000))
		}
	}
	if _, err := os.Stat(filepath.Join(shared, "paused", sb.ID, "complete")); err != nil {
		t.Fatalf("paused image not on the shared storage: %v", err)
	}
	n1.stop(syscall.SIGKILL)
	waitNodes(t, admin, map[string]string{"node1": "expired"})
	// node2 may have taken it over already (RunAdoptions): paused on either.
	if _, st, err := admin.SandboxOwner(context.Background(), sb.ID); st != string(store.StatePaused) || err != nil {
		t.Fatalf("a dead node's paused sandbox on shared storage is %q (%v), want still paused", st, err)
	}
	listedPaused(t, fr, sb.ID, auto.ID) // node2 took them over by itself: listed through the front
	t0 := time.Now()
	resumeVia(t, fr, sb, "node2", admin)
	t.Logf("resumed on node2 in %v", time.Since(t0))
	if c := waitCount(t, sb, before+5); c > before+400 {
		t.Fatalf("counter %d (was %d): ran while paused or restarted", c, before)
	}
	if out, _ := sb.run("", "cat /home/user/f", 20*time.Second); out != "kept\n" {
		t.Fatalf("file after the move: %q", out)
	}
	if _, err := os.Stat(filepath.Join(shared, "paused", sb.ID)); !os.IsNotExist(err) {
		t.Fatalf("paused image left after the resume: %v", err)
	}
	// Traffic alone (autoResume) moves and resumes the other one.
	if out, _ := auto.run("", "cat /home/user/a", 30*time.Second); out != "auto\n" {
		t.Fatalf("auto-resumed on node2 by traffic: %q", out)
	}
	if n, st, _ := admin.SandboxOwner(context.Background(), auto.ID); n != "node2" || st != string(store.StateRunning) {
		t.Fatalf("after its traffic the autoResume sandbox is %s on %s", st, n)
	}
	from := fr.create(map[string]any{"templateID": "shared-snap"}) // made on node1, now dead
	if n, _, _ := admin.SandboxOwner(context.Background(), from.ID); n != "node2" {
		t.Fatalf("create from the dead node's snapshot placed on %q", n)
	}
	if out, _ := from.run("", "cat /home/user/f", 20*time.Second); out != "kept\n" {
		t.Fatalf("sandbox from the dead node's snapshot: %q", out)
	}
	waitCount(t, from, before+5) // the snapshot's memory: the counter goes on
	fr.deleteQuiet(from.ID)
	n1 = startClusterNode(t, "runsc", url, 1, n1.dataDir, "--shared-dir", shared)
	if code := n1.api("GET", "/sandboxes/"+sb.ID, nil, nil); code != 404 {
		t.Fatalf("node1 restarted still has the moved sandbox: %d", code)
	}
	waitCount(t, sb, readCount(sb)+3) // node1's restart left it alone
	frozenOwner(t, admin, url, fr, n2, sb, shared)
}

// snapOnDeadNode snapshots sb (on node1) through the front, as
// "shared-snap" (deleted through the front at the end).
func snapOnDeadNode(t *testing.T, fr *daemon, sb *sandbox) {
	var snap struct {
		SnapshotID string `json:"snapshotID"`
	}
	if code := fr.api("POST", "/sandboxes/"+sb.ID+"/snapshots", map[string]any{"name": "shared-snap"}, &snap); code != 201 {
		t.Fatalf("snapshot through the front: %d", code)
	}
	t.Cleanup(func() { fr.api("DELETE", "/templates/shared-snap", nil, nil) })
}

// resumeVia connects sb through fr (resuming it) and checks node is its
// owner afterwards.
func resumeVia(t *testing.T, fr *daemon, sb *sandbox, node string, admin *store.Store) {
	t.Helper()
	var resp struct{ SandboxID, EnvdAccessToken string }
	if code := fr.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 120}, &resp); code != 201 {
		t.Fatalf("connect through the front: %d, want 201 (resumed)", code)
	}
	if resp.SandboxID != sb.ID || resp.EnvdAccessToken != sb.Token {
		t.Fatalf("resumed identity %+v", resp)
	}
	if n, st, err := admin.SandboxOwner(context.Background(), sb.ID); n != node || st != string(store.StateRunning) || err != nil {
		t.Fatalf("after the resume the sandbox is %q on %q (%v), want running on %s", st, n, err, node)
	}
}

// frozenOwner: sb runs on n2; paused there, n2 frozen past its lease; the
// front resumes it on node1; n2 thawed is fenced and exits; restarted, it
// does not keep the sandbox, which runs on with its memory.
func frozenOwner(t *testing.T, admin *store.Store, url string, fr, n2 *daemon, sb *sandbox, shared string) {
	at := readCount(sb)
	if code := fr.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause on node2: %d\n%s", code, tail(n2.log.String(), 2000))
	}
	_ = n2.cmd.Process.Signal(syscall.SIGSTOP)
	waitNodes(t, admin, map[string]string{"node2": "expired"})
	resumeVia(t, fr, sb, "node1", admin)
	_ = n2.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-n2.exited:
	case <-time.After(3 * clusterTTL):
		t.Fatalf("node2 still runs after its lease was lost:\n%s", tail(n2.log.String(), 2000))
	}
	n2 = startClusterNode(t, "runsc", url, 2, n2.dataDir, "--shared-dir", shared)
	if code := n2.api("GET", "/sandboxes/"+sb.ID, nil, nil); code != 404 {
		t.Fatalf("node2, fenced then restarted, still has the sandbox: %d", code)
	}
	if c := waitCount(t, sb, at+5); c > at+400 {
		t.Fatalf("counter %d (was %d at the pause)", c, at)
	}
	if n, _, _ := admin.SandboxOwner(context.Background(), sb.ID); n != "node1" {
		t.Fatalf("the sandbox is on %q, want node1", n)
	}
}

// TestClusterFrontSnapshots (runsc): without shared storage, through the
// front: pause and connect reach the sandbox's node; creates from a
// snapshot land on the node that has its image; the snapshot list joins
// the nodes; deleting the snapshot reaches its node.
func TestClusterFrontSnapshots(t *testing.T) {
	requirements(t, "runsc")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	n1 := startClusterNode(t, "runsc", url, 1, "")
	startClusterNode(t, "runsc", url, 2, "")
	waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})
	time.Sleep(clusterTTL / 2)
	fr := startFront(t, url)
	sb := n1.create(map[string]any{"timeout": 300})
	sb.d = fr
	sb.run("", "echo local > /home/user/f", 20*time.Second)
	if code := fr.api("POST", "/sandboxes/"+sb.ID+"/snapshots", map[string]any{"name": "local-snap"}, nil); code != 201 {
		t.Fatalf("snapshot through the front: %d", code)
	}
	for range 4 {
		from := fr.create(map[string]any{"templateID": "local-snap"})
		if n, _, _ := admin.SandboxOwner(context.Background(), from.ID); n != "node1" {
			t.Fatalf("create from node1's snapshot placed on %q", n)
		}
		fr.deleteQuiet(from.ID)
	}
	var list []struct{ SnapshotID string }
	if code := fr.api("GET", "/snapshots", nil, &list); code != 200 || len(list) != 1 {
		t.Fatalf("snapshots through the front: %d %+v", code, list)
	}
	if code := fr.api("DELETE", "/templates/local-snap", nil, nil); code != 204 {
		t.Fatalf("delete of node1's snapshot through the front: %d", code)
	}
	if code := fr.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause through the front: %d", code)
	}
	if code := fr.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60}, nil); code != 201 {
		t.Fatalf("connect through the front: %d", code)
	}
	if out, _ := sb.run("", "cat /home/user/f", 20*time.Second); out != "local\n" {
		t.Fatalf("after pause and connect through the front: %q", out)
	}
}

// listedPaused waits (up to 3 lease periods) until the list through fr
// shows every id as paused.
func listedPaused(t *testing.T, fr *daemon, ids ...string) {
	t.Helper()
	for deadline := time.Now().Add(3 * clusterTTL); ; time.Sleep(100 * time.Millisecond) {
		var list []struct{ SandboxID, State string }
		fr.api("GET", "/v2/sandboxes?state=paused", nil, &list)
		n := 0
		for _, s := range list {
			for _, id := range ids {
				if s.SandboxID == id && s.State == "paused" {
					n++
				}
			}
		}
		if n == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("paused sandboxes of the dead node not listed through the front: %+v", list)
		}
	}
}
