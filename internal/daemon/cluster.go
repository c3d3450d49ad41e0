package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/cluster"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// clusterFlags make a node daemon a member of a cluster on PostgreSQL.
type clusterFlags struct {
	url, nodeID, advertise, secretFile string
	leaseTTL                           time.Duration
	signer                             *cluster.Signer // from secretFile (resolve)
	shared                             sharedStorage
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "cluster", "", "postgres://... URL of the cluster's shared store (default $SBX_CLUSTER_URL; empty: single node, SQLite in the data dir)")
	fs.StringVar(&c.nodeID, "node-id", "", "this node's id in the cluster (default: generated once, kept in <data-dir>/node-id)")
	fs.StringVar(&c.advertise, "advertise", "", "base URL other nodes reach this node at (default: http://<listen>)")
	fs.StringVar(&c.secretFile, "cluster-secret-file", "", "file (0600, 32+ bytes) with the secret the API front signs forwarded requests with; a node given it answers only signed requests (clients must come through the front)")
	fs.DurationVar(&c.leaseTTL, "lease-ttl", 10*time.Second, "node lease: renewed every third of it; a node silent this long is fenced and its sandboxes marked lost")
	fs.StringVar(&c.shared.dir, "shared-dir", "", "directory every node of the cluster mounts (NFS ...): paused sandboxes and snapshots are kept there, so they resume on any node with it (needs --cluster)")
}

// resolve fills the defaults and checks the values.
func (c *clusterFlags) resolve(listen string) error {
	if c.url == "" {
		c.url = os.Getenv("SBX_CLUSTER_URL")
	}
	if c.url == "" {
		if c.shared.dir != "" {
			return errors.New("--shared-dir needs --cluster (or $SBX_CLUSTER_URL)")
		}
		return nil
	}
	if !strings.HasPrefix(c.url, "postgres://") && !strings.HasPrefix(c.url, "postgresql://") {
		return errors.New("--cluster: want a postgres:// URL")
	}
	if c.leaseTTL < time.Second || c.leaseTTL > 5*time.Minute {
		return fmt.Errorf("--lease-ttl %v: want 1s..5m", c.leaseTTL)
	}
	if c.advertise == "" {
		c.advertise = "http://" + listen
	}
	if c.secretFile != "" {
		s, err := cluster.LoadSigner(c.secretFile)
		if err != nil {
			return err
		}
		c.signer = s
	}
	return nil
}

// guard makes a node with a cluster secret answer only requests the front
// signed for it (401 otherwise); /health stays open for probes. The
// signature is taken off a verified request: it is the node's alone, and
// sandbox traffic goes on to a server in a sandbox, whose tenant would
// otherwise read a signature of the method and URI it chose, good for 30 s
// straight to the node. The connection of a signed request is the front's:
// it is no longer counted under the front's address (exemptFromAddr), and
// the request takes the client address the front signed as its RemoteAddr
// (rate limits, audit records and logs are per client, not per front).
func (c *clusterFlags) guard(h http.Handler) http.Handler {
	if c.signer == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			if err := c.signer.Verify(r, c.nodeID); err != nil {
				api.WriteError(w, http.StatusUnauthorized, err.Error())
				return
			}
			if a, ok := cluster.Client(r); ok {
				r.RemoteAddr = netip.AddrPortFrom(a, 0).String()
			}
			r.Header.Del(cluster.AuthHeader)
			r.Header.Del(cluster.ClientHeader)
			exemptFromAddr(r.Context())
		}
		h.ServeHTTP(w, r)
	})
}

// nodeID is --node-id, or the id kept in dataDir (made on first use).
func (c *clusterFlags) id(dataDir string) (string, error) {
	if c.nodeID != "" {
		return c.nodeID, nil
	}
	p := filepath.Join(dataDir, "node-id")
	if b, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	id := "node-" + hex.EncodeToString(r[:])
	if err := os.WriteFile(p, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("node id: %w", err)
	}
	return id, nil
}

// openStore opens the node's store: SQLite in the data dir, or with
// --cluster the shared PostgreSQL, where the node then joins (its store
// fenced by its lease) before anything reads its records.
func openStore(ctx context.Context, f *Config, rep *nodeReporter, log *slog.Logger) (*store.Store, *cluster.Member, error) {
	if f.cluster.url == "" {
		st, err := store.Open(f.dataDir)
		return st, nil, err
	}
	id, err := f.cluster.id(f.dataDir)
	if err != nil {
		return nil, nil, err
	}
	rep.id, rep.address, f.cluster.nodeID = id, f.cluster.advertise, id
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := store.OpenPostgres(octx, f.cluster.url)
	if err != nil {
		return nil, nil, err
	}
	if f.cluster.shared.dir != "" && f.role == "node" {
		if err := f.cluster.shared.open(); err != nil {
			st.Close()
			return nil, nil, err
		}
		rep.storage = f.cluster.shared.id
		st.SetStorage(f.cluster.shared.id)
	}
	m, err := cluster.Join(ctx, st, f.cluster.leaseTTL, rep.report, log)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	st.Fence(m.Lease())
	return st, m, nil
}

// nodeReporter describes this node for its heartbeats; the manager is set
// once it exists (before that: no runtimes, nothing used).
type nodeReporter struct {
	id, address, templatesDir, storage string
	maxSandboxes                       int
	mgr                                atomic.Pointer[sandbox.Manager]
}

func (r *nodeReporter) report() *store.Node {
	n := &store.Node{ID: r.id, Address: r.address, Templates: dirNames(r.templatesDir),
		Capacity: store.Capacity{CPU: runtime.NumCPU(), MemoryMB: memTotalMB(), Sandboxes: r.maxSandboxes}, Storage: r.storage}
	if m := r.mgr.Load(); m != nil {
		n.Runtimes = m.RuntimeNames()
		if reg, ok := m.Templates().(*builder.Registry); ok {
			n.Cached, n.Pulls = reg.Present(), reg.Remote != nil
		}
		n.DefaultRuntime = m.Config().DefaultRuntime
		for k, ready := range m.PoolStats() {
			if n.Warm == nil {
				n.Warm = map[string]int{}
			}
			n.Warm[k.Template+":"+k.Runtime] = ready
		}
		for _, in := range m.List() {
			n.Used.CPU += in.CPUCount
			n.Used.MemoryMB += in.MemoryMB
			n.Used.Sandboxes++
		}
	}
	return n
}

// dirNames lists the built templates of dir (directories holding a
// template.json). User builds on this node are not listed yet.
func dirNames(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "template.json")); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

func memTotalMB() int {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int(uint64(si.Totalram) * uint64(si.Unit) >> 20)
}

// startMember heartbeats m until the returned stop is called (a Close of
// the daemon, before the store closes), which then releases the lease. A
// lost lease is sent on lost, which stops Run: a fenced node must not go on
// acting on its sandboxes; its next start reconciles them.
func startMember(m *cluster.Member, lost chan<- error, log *slog.Logger) (stop func()) {
	hctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := m.Run(hctx)
		if err != nil {
			log.Error("node lease lost: fenced, stopping (the next start reconciles this node's sandboxes)", "err", err)
			lost <- err
		}
		done <- err
	}()
	return func() {
		cancel()
		if err := <-done; err != nil {
			return // fenced: no lease to release
		}
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Leave(rctx); err != nil {
			log.Warn("release node lease", "err", err)
			return
		}
		log.Info("released the node lease", "node", m.Lease().Node)
	}
}

// watchLease stops ctx (fenced, with the error as cause) when the node's
// lease is lost; a single node (lost nil) never is.
func watchLease(ctx context.Context, lost <-chan error, fenced context.CancelCauseFunc) {
	if lost == nil {
		return
	}
	go func() {
		select {
		case err := <-lost:
			fenced(err)
		case <-ctx.Done():
		}
	}()
}
