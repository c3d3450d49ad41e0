// Package daemon is the composition root of sbx serve: from a Config it
// builds the node's pieces in dependency order — store, audit log, egress
// path, runtimes, network, layers, sandbox manager, volumes, template
// builder, API, proxy, metrics — hands each to the next through the small
// interfaces the consumer declares, and runs them. cmd/sbx parses the flags
// (ParseFlags) and calls it; a test can start a daemon in-process the same
// way (New, Run, Close).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/audit"
	"github.com/sbx-dev/sbx/internal/fdlimit"
	"github.com/sbx-dev/sbx/internal/network"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/telemetry"
	"github.com/sbx-dev/sbx/internal/volume"
)

// Daemon is one node's daemon, opened (New) and not yet closed (Close).
// It is not safe for concurrent use: Run it once, then Close it.
type Daemon struct {
	cfg     *Config
	log     *slog.Logger
	closers []func() // what New opened; Close runs them last first

	keys *api.Keys
	st   *store.Store
	aud  *audit.Log
	eg   *egressSetup
	tel  *telemetry.Store
	mgr  *sandbox.Manager
	nw   *network.Manager
	vols *volume.Manager

	rep  *nodeReporter // this node's report to the cluster registry
	lost chan error    // a lost cluster lease (nil: a single node)
}

// Serve is New, Run and Close: sbx serve (or, with --role api, the
// cluster's API front, which has none of a node's pieces).
func Serve(ctx context.Context, cfg *Config, log *slog.Logger) error {
	if cfg.role == "api" {
		return serveFront(ctx, cfg, log)
	}
	d, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Run(ctx)
}

// New opens what the node holds before it recovers or serves: TLS material
// (first: a bad certificate stops the start before anything runs), the
// data dir, API keys, metrics, store, audit log, egress sockets, telemetry,
// the sandbox manager and volumes. ctx bounds the background work started
// here (audit checkpoints). On error everything opened is closed.
func New(ctx context.Context, cfg *Config, log *slog.Logger) (_ *Daemon, err error) {
	d := &Daemon{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if cfg.ring == nil {
		cfg.ring = newLogRing() // a caller's own logger: no recent lines to show
	}
	if err := d.openState(ctx); err != nil {
		return nil, err
	}
	return d, d.openSandboxes(ctx)
}

// onClose adds fn to what Close runs.
func (d *Daemon) onClose(fn func()) { d.closers = append(d.closers, fn) }

// Close releases what New opened, last first. Sandboxes keep running: the
// next start re-adopts them. It returns nil; failures are logged.
func (d *Daemon) Close() error {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
	return nil
}

// openState takes the data dir's lock (first: a second daemon on the dir
// fails before it reads or writes anything there), then opens the TLS
// material, keys, metrics, store and audit log.
func (d *Daemon) openState(ctx context.Context) error {
	f, log := d.cfg, d.log
	// 0711: sandbox root on userns runtimes (an unprivileged host uid) must
	// traverse to its rootfs; nothing under it is listable.
	if err := os.MkdirAll(f.dataDir, 0o711); err != nil {
		return err
	}
	// before anything in the dir is read or written: one daemon per dir
	release, err := lockDataDir(f.dataDir)
	if err != nil {
		return err
	}
	d.onClose(release)
	if f.tls.enabled() { // a bad certificate is a startup error, before anything runs
		c, err := loadTLS(f.tls, f.domain, log)
		if err != nil {
			return err
		}
		f.tlsConf = c
	}
	if err := os.Chmod(f.dataDir, 0o711); err != nil {
		return err
	}
	protectDaemon(log)
	keys, generated, err := api.LoadKeys(f.dataDir, os.Getenv("SBX_API_KEY"))
	if err != nil {
		return err
	}
	d.keys = keys
	if generated != "" {
		fmt.Printf("Generated API key (shown once; only its hash is stored in %s):\n\n  export SBX_API_KEY=%s\n\n", f.dataDir, generated)
	}
	f.metrics = newMetrics()
	d.rep = &nodeReporter{templatesDir: f.templatesDir, maxSandboxes: f.maxSandboxes}
	st, member, err := openStore(ctx, f, d.rep, log)
	if err != nil {
		return err
	}
	d.st = st
	d.onClose(func() { d.st.Close() })
	if member != nil { // heartbeats from here on: Recover may outlast a lease
		d.lost = make(chan error, 1)
		d.onClose(startMember(member, d.lost, log))
	}
	d.st.OnWrite = f.metrics.StoreWrite
	if f.secrets, err = openSecrets(f, d.st, log); err != nil {
		return err
	}
	if f.egressCA, err = loadEgressCA(f, log); err != nil {
		return err
	}
	auditCtx, stopAudit := context.WithCancel(ctx)
	d.onClose(stopAudit)
	aud, closeAudit, err := openAudit(auditCtx, f, f.metrics, log)
	if err != nil {
		return err
	}
	d.aud = aud
	d.onClose(closeAudit)
	return nil
}

// openSandboxes opens the egress sockets, telemetry, the sandbox manager
// (runtimes, network, layers, templates) and volumes.
func (d *Daemon) openSandboxes(ctx context.Context) error {
	f, log := d.cfg, d.log
	eg, err := openEgress(&f.egress, log)
	if err != nil {
		return err
	}
	d.eg = eg
	d.onClose(eg.close)
	eg.obs = f.metrics
	tel, saveTelemetry := openTelemetry(f.dataDir, log)
	d.tel = tel
	d.onClose(saveTelemetry)
	mgr, nw, err := buildManager(ctx, f, d.st, d.aud, tel, eg, log)
	if err != nil {
		return err
	}
	d.mgr, d.nw = mgr, nw
	d.onClose(mgr.Close)
	d.rep.mgr.Store(mgr)
	mgr.SetObserver(f.metrics)
	f.metrics.WatchManager(mgr)
	f.metrics.CountFunc("network_table_rebuilds_total", "Times the daemon found its nftables table removed under it (nft flush ruleset, a firewall reload) and rebuilt it with every live sandbox's rules (internal/network heal.go).",
		func() float64 { return float64(nw.Rebuilds()) })
	vols, err := volume.Open(ctx, volume.Config{Dir: filepath.Join(f.dataDir, "volumes"), DefaultSizeMB: f.volumeMB,
		MaxSizeMB: f.volumeMaxMB, TotalMB: f.volumeTotalMB, UIDBase: uint32(f.uidBase)}, d.st, log)
	if err != nil {
		return fmt.Errorf("open volumes: %w", err)
	}
	d.vols = vols
	d.onClose(func() { vols.Close() })
	mgr.SetVolumes(vols)
	return nil
}

// Run serves until ctx ends (or a listener fails, or a cluster node's
// lease is lost: then it returns that error, wrapping store.ErrFenced): the
// egress servers start, sandboxes are recovered (or, with
// --reap-all-and-exit, all reaped and Run returns), interrupted template
// builds too, then the pools, watchdog, telemetry, metrics listener,
// tenants and the HTTP listeners. On return pooled sandboxes have been
// released (up to 30 s).
func (d *Daemon) Run(ctx context.Context) error {
	ctx, fenced := context.WithCancelCause(ctx)
	defer fenced(nil)
	watchLease(ctx, d.lost, fenced)
	err := d.run(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, store.ErrFenced) {
		return cause
	}
	return err
}

func (d *Daemon) run(ctx context.Context) error {
	f, log, mgr := d.cfg, d.log, d.mgr
	dnsCtx, stopDNS := context.WithCancel(ctx)
	defer stopDNS()
	go d.eg.serveDNS(dnsCtx, d.nw, d.aud, log)
	ic, err := newInterceptor(f, f.egressCA, mgr, d.aud, log)
	if err != nil {
		return err
	}
	d.eg.intercept, d.eg.interceptVia = ic.Handle, ic.HandleVia
	d.eg.admit = egressAdmit(egressLimits(fdlimit.Descriptors()), managerTeams(mgr))
	go d.eg.serveGuard(dnsCtx, d.nw, d.aud, log)
	go d.eg.serveTunnel(dnsCtx, d.nw, d.aud, log)
	if f.reapAll {
		n, err := mgr.ReapAll(ctx)
		log.Info("reaped every sandbox", "reaped", n, "err", err)
		if err == nil {
			err = unmountRunDir(f.dataDir)
		}
		return err
	}
	n, err := mgr.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recover sandboxes: %w", err)
	}
	log.Info("recovered sandboxes", "adopted", n)
	d.tel.EndMissing(liveIDs(mgr))
	bs := newBuilder(f, mgr, d.st, log)
	if err := bs.Recover(ctx); err != nil {
		return fmt.Errorf("recover template builds: %w", err)
	}
	defer bs.Close()
	go bs.RunGC(ctx, 10*time.Minute)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	poolsDone := make(chan struct{})
	go func() { mgr.RunPools(ctx); close(poolsDone) }()
	go mgr.RunWatchdog(ctx)
	go runNetHeal(ctx, d.nw, log)
	go mgr.RunAdoptions(ctx, f.cluster.leaseTTL) // --shared-dir only
	go runTelemetry(ctx, d.tel, mgr, log)
	if f.obs.metricsListen != "" {
		if err := serveMetrics(ctx, f.obs.metricsListen, f.metrics, log); err != nil {
			return err
		}
	}
	tenants, err := api.LoadTenants(ctx, d.st, log)
	if err != nil {
		return err
	}
	tenants.Defaults, tenants.Shared = f.teamQuota, f.cluster.url != ""
	go tenants.Run(ctx, 10*time.Second)
	stopFront, err := d.startNodeFront()
	if err != nil {
		return err
	}
	defer stopFront()
	self, err := d.startSelfAPI()
	if err != nil {
		return err
	}
	defer self.stop()
	err = listenAndServe(ctx, f, self, mgr, bs, d.vols, d.keys, tenants, d.aud, d.tel, log)
	cancel()
	select { // pooled sandboxes hold no tenant: release them on a clean stop
	case <-poolsDone:
	case <-time.After(30 * time.Second):
	}
	return err
}
