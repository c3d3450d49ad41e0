package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// TestClusterPausedDisk (runsc): a team's disk quota counts its paused
// sandboxes on every node of a cluster. Before, a node counted only the
// paused sandboxes it held (the manager's own), so a team limited to 32
// MiB paused a 40 MiB sandbox on node1 and then, on node2, paused another
// and took snapshots as if it held nothing: its quota's worth on every
// node. Now the store's paused records (every node's) are counted: the
// pause and the snapshot on node2 are 429 with Retry-After. So are its
// snapshots: a node counted those it sees (its own and its shared
// storage's), so a snapshot on node1's disk left node2's pauses free.
func TestClusterPausedDisk(t *testing.T) {
	requirements(t, "runsc")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	n1 := startClusterNode(t, "runsc", url, 1, "")
	tm := n1.newTeam("cluster-disk", map[string]any{"diskMB": 32})
	n2 := startClusterNode(t, "runsc", url, 2, "") // a node loads the teams when it starts
	waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})

	first := n1.createAs(tm.Key, nil)
	if out, code := first.run("user", "head -c 40M /dev/urandom > ~/big && echo ok", time.Minute); code != 0 {
		t.Fatalf("fill: %d %s", code, out)
	}
	if c := n1.as(tm.Key, "POST", "/sandboxes/"+first.ID+"/pause", map[string]any{}, nil); c != 204 {
		t.Fatalf("pause on node1 under the quota: %d", c)
	}

	second := n2.createAs(tm.Key, nil)
	for _, path := range []string{"/pause", "/snapshots"} {
		code, h, b := n2.call("POST", "/sandboxes/"+second.ID+path, map[string]string{"X-API-Key": tm.Key}, map[string]any{})
		if code != 429 || h.Get("Retry-After") == "" || !strings.Contains(string(b), "MiB of disk") {
			t.Fatalf("%s on node2 past the team's disk quota (its sandbox paused on node1 holds 40 MiB of 32): %d %q %s", path, code, h.Get("Retry-After"), b)
		}
	}
	if c := n2.as(tm.Key, "POST", "/volumes", map[string]any{"name": "v", "sizeMB": 1}, nil); c != 429 {
		t.Fatalf("volume create on node2 past the team's disk quota: %d", c)
	}

	// Deleting the paused sandbox on node1 frees the team's share on node2;
	// a snapshot on node1 (its own disk, which node2 does not list) takes it.
	n1.deleteAs(tm.Key, first.ID)
	third := n1.createAs(tm.Key, nil)
	if out, code := third.run("user", "head -c 40M /dev/urandom > ~/big && echo ok", time.Minute); code != 0 {
		t.Fatalf("fill: %d %s", code, out)
	}
	if c, _, b := n1.call("POST", "/sandboxes/"+third.ID+"/snapshots", map[string]string{"X-API-Key": tm.Key}, map[string]any{}); c != 201 {
		t.Fatalf("snapshot on node1 under the quota: %d %s", c, b)
	}
	n1.deleteAs(tm.Key, third.ID)
	code, h, b := n2.call("POST", "/sandboxes/"+second.ID+"/pause", map[string]string{"X-API-Key": tm.Key}, map[string]any{})
	if code != 429 || h.Get("Retry-After") == "" {
		t.Fatalf("pause on node2 past the team's disk quota (its snapshot on node1 holds 40 MiB of 32): %d %q %s", code, h.Get("Retry-After"), b)
	}
}

// TestClusterTemplateDisk (runsc): a team's templates count against its
// disk quota on every node, not only on the node that built them (whose
// disk holds the layers). A build's record holds its layers' sizes: before,
// a node lacking the layers counted them as nothing, so a team limited to
// 32 MiB built a 24 MiB template on node1 and then created a 16 MiB volume
// on node2 (201); now that is 429.
func TestClusterTemplateDisk(t *testing.T) {
	requirements(t, "runsc")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	n1 := startClusterNode(t, "runsc", url, 1, "", "--templates-dir", baseCopy(t)) // each node its own layer store
	tm := n1.newTeam("cluster-tpl-disk", map[string]any{"diskMB": 32})
	n2 := startClusterNode(t, "runsc", url, 2, "", "--templates-dir", baseCopy(t))
	unmountVolumesAtEnd(t, n2)
	waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})

	spec := map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"head -c 24M /dev/urandom > /big", "root"}}}}
	tid, bid, code, _ := n1.buildAs(t, tm.Key, "cluster-tpl-disk", spec)
	if code != 202 {
		t.Fatalf("build start under the quota: %d", code)
	}
	if st := n1.waitBuildAs(t, tm.Key, tid, bid); st.Status != "ready" {
		t.Fatalf("build under the quota: %+v", st)
	}
	code, h, b := n2.call("POST", "/volumes", map[string]string{"X-API-Key": tm.Key}, map[string]any{"name": "v", "sizeMB": 16})
	if code != 429 || h.Get("Retry-After") == "" {
		t.Fatalf("16 MiB volume on node2 next to a 24 MiB template built on node1, quota 32 MiB: %d %q %s", code, h.Get("Retry-After"), b)
	}
}
