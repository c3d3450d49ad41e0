package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/layer"
	"github.com/sbx-dev/sbx/internal/network"
	"github.com/sbx-dev/sbx/internal/runtime/oci"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template"
	"github.com/sbx-dev/sbx/internal/template/dist"
	"github.com/sbx-dev/sbx/internal/template/layers"
	ocipull "github.com/sbx-dev/sbx/internal/template/oci"
)

// buildManager wires the concrete host pieces into a sandbox.Manager.
// The network manager is returned too: the DNS filter needs it.
func buildManager(_ context.Context, f *Config, st *store.Store, aud sandbox.Auditor, events sandbox.EventSink, eg *egressSetup, log *slog.Logger) (*sandbox.Manager, *network.Manager, error) {
	agent, err := agentPath(f.agent)
	if err != nil {
		return nil, nil, err
	}
	run, err := mountRunDir(f.dataDir, log)
	if err != nil {
		return nil, nil, err
	}
	rts, unavailable := runtimes(f, run, log)
	subnet, err := netip.ParsePrefix(f.subnet)
	if err != nil {
		return nil, nil, fmt.Errorf("--subnet: %w", err)
	}
	nw, err := network.New(network.Config{Subnet: subnet, IfPrefix: f.netPrefix, Table: f.netPrefix, Egress: eg.cfg, Log: log})
	if err != nil {
		return nil, nil, err
	}
	if changed, err := network.RaiseNeighbourTable(f.maxSandboxes); err != nil {
		log.Warn("cannot fit --max-sandboxes in the kernel's neighbour table: past about 500 sandboxes on this host new ones may not be reachable; raise net.ipv4.neigh.default.gc_thresh3 on the host", "err", err)
	} else if changed != "" {
		log.Info("raised the kernel's neighbour table thresholds for --max-sandboxes", "changed", changed)
	}
	ly, err := layerStore(f, run, log)
	if err != nil {
		return nil, nil, err
	}
	pools, err := parsePools(f.pools, f.runtime)
	if err != nil {
		return nil, nil, err
	}
	cfg := sandbox.Config{
		DefaultRuntime: f.runtime, AgentBinary: agent, UIDBase: uint32(f.uidBase),
		DefaultTimeout: f.defaultTimeout, MaxTimeout: f.maxTimeout,
		PauseRetry: f.pauseRetry, PauseRetryFor: f.pauseRetryFor,
		Defaults:     sandbox.Resources{CPUCount: f.cpu, MemoryMB: f.memMB, DiskSizeMB: f.diskMB, Pids: f.pids},
		Max:          sandbox.Resources{CPUCount: 4 * f.cpu, MemoryMB: 8 * f.memMB, DiskSizeMB: 8 * f.diskMB},
		MaxSandboxes: f.maxSandboxes, MaxCreating: f.maxCreating, MaxQueued: f.maxQueued, Domain: f.domain, Pools: pools, Audit: aud, Events: events,
		ImagesDir: filepath.Join(f.dataDir, "images"), ImageQuota: f.imageQuotaMB << 20,
		SharedDir: f.cluster.shared.dir, StorageID: f.cluster.shared.id,
		Unavailable: unavailable, ProxyCheck: eg.tunnel.check(subnet),
		ProxySealer: f.sealer,
	}
	if f.egressCA != nil {
		cfg.EgressCA = f.egressCA.CertPEM()
	}
	owner, err := nodeID(f.dataDir)
	if err != nil {
		return nil, nil, err
	}
	mgr, err := sandbox.New(cfg, st, rts, netAdapter{nw, eg.forget}, ly, newRegistry(f, st, owner), log)
	return mgr, nw, err
}

// layerStore makes the sandboxes' writable-layer store: with --disk-layers
// crun and runc layers on disk images under <data-dir>/layer-images, if the
// host can make them. Without it, images an earlier run made are still
// reaped with their sandboxes.
func layerStore(f *Config, run string, log *slog.Logger) (*layer.Store, error) {
	ly, err := layer.New(filepath.Join(run, "sandboxes"))
	if err != nil {
		return nil, err
	}
	images := filepath.Join(f.dataDir, "layer-images")
	if !f.diskLayers {
		if real, err := filepath.EvalSymlinks(images); err == nil {
			ly.Images, ly.ReapImagesOnly = real, true
		}
		return ly, nil
	}
	if err := ly.UseImages(images); err != nil {
		log.Warn("crun and runc sandboxes' writable layers stay on a tmpfs: their files count against their memory limit", "err", err)
	}
	return ly, nil
}

// nodeID is this data dir's persistent random id (<data-dir>/node-id),
// made on first start: daemons sharing a templates dir tell their uses of
// layers apart by it.
func nodeID(dataDir string) (string, error) {
	p := filepath.Join(dataDir, "node-id")
	if b, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(b))) == 32 {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := hex.EncodeToString(b)
	return id, os.WriteFile(p, []byte(id+"\n"), 0o600)
}

// newRegistry makes the template registry: built-in templates in the
// templates dir, user templates' layers under it, records in st.
func newRegistry(f *Config, st *store.Store, owner string) *builder.Registry {
	base := uint32(f.uidBase)
	r := &builder.Registry{
		Builtins: &template.Store{Dir: f.templatesDir},
		Layers:   LayerStore(f.templatesDir, owner, base),
		Store:    st, UIDBase: base, Shared: f.cluster.url != "",
	}
	if f.templateRegistry != "" {
		r.Remote = &dist.Remote{Repo: f.templateRegistry, Insecure: f.templateRegistryInsecure, Layers: r.Layers,
			Keychain: authn.DefaultKeychain}
	}
	return r
}

// LayerStore is the layer store of a templates dir, its uses marked as
// owner's, with user-namespace copies shifted by uidBase.
func LayerStore(templatesDir, owner string, uidBase uint32) *layers.Store {
	return &layers.Store{Dir: filepath.Join(templatesDir, "layers"), Owner: owner, Shift: func(ctx context.Context, src, dst string) error {
		return template.ShiftCopy(ctx, src, dst, uidBase)
	}}
}

// newBuilder makes the template build service over mgr's registry.
func newBuilder(f *Config, mgr *sandbox.Manager, st *store.Store, log *slog.Logger) *builder.Service {
	reg := mgr.Templates().(*builder.Registry)
	p := &ocipull.Puller{Insecure: f.insecureRegistries, Mirror: f.registryMirror}
	d := mgr.Config().Defaults
	shift := false
	for _, n := range mgr.RuntimeNames() {
		shift = shift || n == "crun" || n == "runc" // the user-namespace runtimes
	}
	cfg := builder.Config{ShiftLayers: shift, DataDir: f.dataDir, TmpDir: filepath.Join(f.dataDir, "run", "build-views"),
		MaxConcurrent: f.buildConcurrency, StepTimeout: f.buildStepTimeout, QuotaBytes: f.templateQuotaMB << 20,
		CPUCount: max(d.CPUCount, 2), MemoryMB: max(d.MemoryMB, 2048), DiskSizeMB: max(d.DiskSizeMB, 4096),
		OnBuild: f.metrics.Build, OnStep: f.metrics.BuildStep,
		RegistryGuard: &egress.Ranges{Open: f.registryOpen}}
	if subnet, err := netip.ParsePrefix(f.subnet); err == nil { // checked before the builder is made
		cfg.RegistryGuard.Never = []netip.Prefix{subnet}
	}
	return builder.New(cfg, reg, mgr, st, p, log)
}

// runtimes opens every backend that works on this host; missing ones are
// logged and returned with the reason (creates asking for them get 503,
// /health reports them), and the manager refuses to start if the default is
// among them.
func runtimes(f *Config, runDir string, log *slog.Logger) (sandbox.Runtimes, map[string]string) {
	rts, unavailable := sandbox.Runtimes{}, map[string]string{}
	for _, kind := range []string{"runsc", "crun", "runc"} {
		bin := ""
		if kind == "runsc" {
			bin = f.runsc
		}
		rt, err := oci.New(kind, oci.Config{Binary: bin, StateDir: filepath.Join(runDir, "runtime"), OwnerDir: runDir, Timeout: f.runtimeTimeout, OnCommand: f.metrics.RuntimeCommand, Log: log})
		if err != nil {
			log.Warn("runtime unavailable", "runtime", kind, "err", err)
			unavailable[kind] = err.Error()
			continue
		}
		rts[kind] = rt
	}
	return rts, unavailable
}

// netAdapter adapts network.Manager to sandbox.Network; forget drops what
// the egress path remembers of a sandbox (its resolutions) at teardown.
type netAdapter struct {
	m      *network.Manager
	forget func(id string)
}

func (n netAdapter) Setup(ctx context.Context, id string) (sandbox.NetInfo, error) {
	l, err := n.m.Setup(ctx, id)
	if errors.Is(err, network.ErrRulesLost) {
		return sandbox.NetInfo{}, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	if err != nil {
		return sandbox.NetInfo{}, err
	}
	return netInfo(l), nil
}

func netInfo(l *network.Link) sandbox.NetInfo {
	return sandbox.NetInfo{NetNSPath: l.NetNSPath, SandboxIP: l.SandboxIP, Gateway: l.HostIP}
}

func (n netAdapter) SetPolicy(ctx context.Context, id string, p egress.Policy) error {
	return n.m.SetPolicy(ctx, id, p)
}

func (n netAdapter) Lookup(id string) (sandbox.NetInfo, bool) {
	l, ok := n.m.Lookup(id)
	if !ok {
		return sandbox.NetInfo{}, false
	}
	return netInfo(l), true
}

func (n netAdapter) Teardown(ctx context.Context, id string) error {
	err := n.m.Teardown(ctx, id)
	if err == nil {
		n.forget(id)
	}
	return err
}
func (n netAdapter) List() []string { return n.m.List() }
