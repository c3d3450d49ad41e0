package integration

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

const clusterTTL = 2 * time.Second

// startClusterNode runs node i (1 or 2) of a cluster on url: its own data
// dir (dataDir, or fresh), port, half of the test subnet and link prefix.
func startClusterNode(t *testing.T, rt, url string, i int, dataDir string, extra ...string) *daemon {
	t.Helper()
	prefix, args := clusterNodeArgs(url, i, extra)
	d := startDaemon(t, rt, dataDir, args...)
	d.netPrefix = prefix
	return d
}

// clusterNodeArgs are the serve flags of cluster node i (its half of the
// test subnet, its link prefix, which it returns) followed by extra.
func clusterNodeArgs(url string, i int, extra []string) (prefix string, args []string) {
	base := netip.MustParsePrefix(envOr("SBX_IT_SUBNET", "10.202.0.0/16")).Masked()
	a := base.Addr().As4()
	a[1] += byte(i - 1) // x.y.0.0/17 and x.y.128.0/17 of a /16
	if base.Bits() == 16 {
		a[1] -= byte(i - 1)
		a[2] = byte(128 * (i - 1))
	}
	half := netip.PrefixFrom(netip.AddrFrom4(a), base.Bits()+1)
	prefix = clusterPrefix(envOr("SBX_IT_NET_PREFIX", "sbi"), i)
	return prefix, append([]string{"--cluster", url, "--lease-ttl", clusterTTL.String(), "--node-id", "node" + string(rune('0'+i)),
		"--subnet", half.String(), "--net-prefix", prefix}, extra...)
}

// clusterPrefix is node i's link prefix: none of the nodes' is a prefix of
// the harness's p, nor p of theirs (a daemon's rules match links by
// prefix, and a table a failed test left must not fence the nodes' links).
func clusterPrefix(p string, i int) string {
	d := string(rune('0' + i))
	switch {
	case len(p) == 3:
		return p[:2] + d
	case len(p) == 2 && p[0] != p[1] && p[1] >= 'a' && p[1] <= 'z':
		return p[1:] + p[:1] + d // ra → ar1: distinct for distinct 2-letter prefixes
	case p[0] == 'z':
		return "y" + p[:1] + d
	}
	return "z" + p[:1] + d
}

// TestClusterNodeLoss: two node daemons on one PostgreSQL both register
// and serve their own sandboxes. kill -9 of one: within two lease periods
// it is fenced and its sandboxes are marked lost, the other keeps working;
// restarted, it rejoins with a newer fencing token and reaps what it ran.
// A node frozen past its lease (SIGSTOP) comes back to a refused lease
// and stops instead of acting on its sandboxes.
func TestClusterNodeLoss(t *testing.T) {
	requirements(t, "crun")
	url := pgtest.URL(t)
	ctx := context.Background()
	admin, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	n1 := startClusterNode(t, "crun", url, 1, "")
	n2 := startClusterNode(t, "crun", url, 2, "")
	waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})
	time.Sleep(clusterTTL / 2) // a heartbeat: the report with the manager's runtimes
	nodes := waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})
	if n := nodes["node1"]; !slices.Contains(n.Runtimes, "crun") || !slices.Contains(n.Templates, "base") ||
		slices.Contains(n.Templates, "layers") || n.Capacity.CPU == 0 || !strings.HasPrefix(nodes["node2"].Address, "http://127.0.0.1:") {
		t.Fatalf("node report: %+v", n)
	}
	firstToken := nodes["node1"].Token
	sb1, sb2 := n1.create(map[string]any{"timeout": 600}), n2.create(map[string]any{"timeout": 600})
	if code := n2.api("GET", "/sandboxes/"+sb1.ID, nil, nil); code != 404 {
		t.Fatalf("node2 serves node1's sandbox: %d", code)
	}

	n1.stop(syscall.SIGKILL)
	killed := time.Now()
	waitNodes(t, admin, map[string]string{"node1": "expired", "node2": "live"})
	if took := time.Since(killed); took > 2*clusterTTL+time.Second {
		t.Errorf("dead node detected after %v, want within 2 lease periods (%v)", took, 2*clusterTTL)
	}
	t.Logf("dead node fenced %v after kill -9 (lease %v)", time.Since(killed).Round(10*time.Millisecond), clusterTTL)
	if st := recordState(t, url, "node1", sb1.ID); st != string(store.StateLost) {
		t.Fatalf("node1's sandbox is %q, want lost", st)
	}
	if out, code := sb2.run("", "echo alive", 10*time.Second); code != 0 || out != "alive\n" {
		t.Fatalf("node2's sandbox after node1's loss: %q %d", out, code)
	}
	n2.create(nil)

	n1 = startClusterNode(t, "crun", url, 1, n1.dataDir)
	if got := waitNodes(t, admin, map[string]string{"node1": "live"})["node1"].Token; got <= firstToken {
		t.Fatalf("rejoined with token %d, not above %d", got, firstToken)
	}
	if code := n1.api("GET", "/sandboxes/"+sb1.ID, nil, nil); code != 404 {
		t.Fatalf("lost sandbox after rejoin: %d, want 404 (reaped)", code)
	}
	if st := recordState(t, url, "node1", sb1.ID); st != "" {
		t.Fatalf("lost sandbox's record after rejoin: %q, want removed", st)
	}
	n1.create(nil)

	frozenFence(t, admin, url, n2, sb2.ID)
}

// frozenFence stops n2 past its lease: the other node fences it and marks its sandboxes
// lost; resumed, n2's heartbeat is refused and it exits without writing.
func frozenFence(t *testing.T, admin *store.Store, url string, n2 *daemon, sb2 string) {
	_ = n2.cmd.Process.Signal(syscall.SIGSTOP)
	waitNodes(t, admin, map[string]string{"node2": "expired", "node1": "live"})
	_ = n2.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-n2.exited:
	case <-time.After(3 * clusterTTL):
		t.Fatalf("node2 still runs after its lease was lost:\n%s", tail(n2.log.String(), 2000))
	}
	if n2.cmd.ProcessState.ExitCode() == 0 || !strings.Contains(n2.log.String(), "fenced") {
		t.Fatalf("node2 exit %v; log:\n%s", n2.cmd.ProcessState, tail(n2.log.String(), 2000))
	}
	if st := recordState(t, url, "node2", sb2); st != string(store.StateLost) {
		t.Fatalf("node2's sandbox after it came back: %q, want still lost", st)
	}
	n2 = startClusterNode(t, "crun", url, 2, n2.dataDir)
	if code := n2.api("GET", "/sandboxes/"+sb2, nil, nil); code != 404 {
		t.Fatalf("node2's lost sandbox after restart: %d, want 404", code)
	}
}

// waitNodes waits (up to 4 lease periods) until each named node has the
// given state, and returns the registry by id.
func waitNodes(t *testing.T, admin *store.Store, want map[string]string) map[string]*store.Node {
	t.Helper()
	return pollNodes(t, admin, 4*clusterTTL, fmt.Sprint(want), func(byID map[string]*store.Node) bool {
		for id, st := range want {
			if byID[id] == nil || byID[id].State != st {
				return false
			}
		}
		return true
	})
}

// pollNodes reads the node registry every 100 ms until ok holds of it (by
// node id), and returns it; past timeout it fails the test naming what.
func pollNodes(t *testing.T, admin *store.Store, timeout time.Duration, what string, ok func(map[string]*store.Node) bool) map[string]*store.Node {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ns, err := admin.Nodes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]*store.Node{}
		for _, n := range ns {
			byID[n.ID] = n
		}
		if ok(byID) {
			return byID
		}
		if time.Now().After(deadline) {
			var seen []store.Node
			for _, n := range ns {
				seen = append(seen, *n)
			}
			t.Fatalf("nodes %+v; want %s", seen, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openAdmin opens the cluster's PostgreSQL store for the test's own reads,
// closed when the test ends.
func openAdmin(t *testing.T, url string) *store.Store {
	t.Helper()
	s, err := store.OpenPostgres(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recordState is the state of node's sandbox record id ("" if none), read
// through a store scoped to node (a lease-less read; reads are not fenced).
func recordState(t *testing.T, url, node, id string) string {
	t.Helper()
	s, err := store.OpenPostgres(context.Background(), url) // per call: it is polled
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Fence(store.Lease{Node: node})
	r, err := s.Get(context.Background(), id)
	if err != nil {
		return ""
	}
	return string(r.State)
}
