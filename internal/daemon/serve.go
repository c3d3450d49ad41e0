package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/audit"
	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/dashboard"
	"github.com/sbx-dev/sbx/internal/egress/intercept"
	"github.com/sbx-dev/sbx/internal/metrics"
	"github.com/sbx-dev/sbx/internal/proxy"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sdnotify"
	"github.com/sbx-dev/sbx/internal/secrets"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/telemetry"
	"github.com/sbx-dev/sbx/internal/template/dist"
	"github.com/sbx-dev/sbx/internal/volume"
)

// Config is the operator's settings of one node: sbx serve's flags
// (ParseFlags), plus what the caller wires in.
type Config struct {
	listen, dataDir, templatesDir, runtime, runsc, agent, domain, subnet, netPrefix, logLevel, pools string
	uidBase                                                                                          uint
	defaultTimeout, maxTimeout, runtimeTimeout                                                       time.Duration
	pauseRetry, pauseRetryFor                                                                        time.Duration
	cpu, memMB, diskMB, pids                                                                         int
	maxSandboxes, maxCreating, maxQueued                                                             int
	maxConnsPerAddr                                                                                  int
	imageQuotaMB                                                                                     int64
	egress                                                                                           egressFlags
	insecureRegistries                                                                               stringList
	templateRegistry                                                                                 string
	templateRegistryInsecure                                                                         bool
	registryMirror                                                                                   string
	registryOpenFlag                                                                                 string
	registryOpen                                                                                     []netip.Prefix
	buildConcurrency                                                                                 int
	buildStepTimeout                                                                                 time.Duration
	templateQuotaMB                                                                                  int64
	volumeMB, volumeMaxMB, volumeTotalMB                                                             int64
	tls                                                                                              tlsFlags
	tlsConf                                                                                          *tls.Config // loaded from tls by serve
	obs                                                                                              obsFlags
	reapAll                                                                                          bool // reap every sandbox, then exit
	diskLayers                                                                                       bool // crun/runc layers on disk images, not tmpfs
	secretsKeyFile                                                                                   string
	intercept                                                                                        interceptFlags
	egressCA                                                                                         *intercept.CA // loaded by New
	cluster                                                                                          clusterFlags
	role, frontListen                                                                                string

	fs          *flag.FlagSet    // the parsed flags (debug config)
	ring        *logRing         // the daemon's recent log lines
	metrics     *metrics.Metrics // the daemon's metrics (set by serve)
	teamQuota   store.Quota      // per-team quota defaults (teams.go)
	teamAPIRate float64          // per team: API requests a second (teams.go)
	secrets     *secrets.Manager // the teams' secrets (set by New)
	connsOnce   sync.Once        // makes conns
	conns       *connLimit       // every client listener's bound together (clientConns)
	sealer      *secrets.Sealer  // the secrets' sealer, also for egress proxy passwords in records (set by New)

	// MCP, if set, serves /mcp: MCP over the daemon's own API at apiURL,
	// reached through rt (cmd/sbx's client-backed tools; on a cluster node
	// apiURL is a front on loopback: selfAPI), for callers whose
	// key auth accepts (the API's own authentication; it names the key's
	// team). nil: no /mcp.
	MCP func(apiURL string, rt http.RoundTripper, admit func(w http.ResponseWriter, r *http.Request, key string) (team string, ok bool)) http.Handler
}

// ParseFlags reads sbx serve's flags into a Config; flag.ErrHelp for -h.
func ParseFlags(args []string) (*Config, error) {
	f := &Config{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: sbx serve [flags]\n\nRuns the sbx daemon: the E2B-compatible API and sandbox traffic on one origin.\nThe API key comes from SBX_API_KEY, or is generated on first start and printed once.\n\nflags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&f.listen, "listen", "127.0.0.1:3000", "address of the API and sandbox traffic origin")
	fs.StringVar(&f.dataDir, "data-dir", "/var/lib/sbx", "state directory: database, templates, sandbox layers, runtime state")
	fs.StringVar(&f.templatesDir, "templates-dir", "", "template store (default: <data-dir>/templates)")
	fs.StringVar(&f.runtime, "runtime", "runsc", "default runtime backend: runsc, crun or runc")
	fs.StringVar(&f.runsc, "runsc", "", "runsc binary (default: /opt/sbx/bin/runsc, else runsc on PATH)")
	fs.StringVar(&f.agent, "agent", "", "path of the sbx-agent binary (default: sbx-agent next to this binary)")
	fs.StringVar(&f.domain, "domain", "", "sandbox domain for Host routing <port>-<id>.<domain> and the SDK's \"domain\" (default: any)")
	fs.StringVar(&f.subnet, "subnet", "10.200.0.0/16", "IPv4 pool for sandbox links")
	fs.StringVar(&f.netPrefix, "net-prefix", "sbx", "name prefix (1-3 chars of [a-z0-9], a letter first, not an nft keyword such as le) of sandbox links and of the nftables table; distinct per daemon on one host, and none a prefix of another's (rules match links by prefix)")
	fs.BoolVar(&f.reapAll, "reap-all-and-exit", false, "do not serve: stop every sandbox on this data dir (running, paused, pooled) and release its host resources, then exit (to empty a node; a plain stop leaves sandboxes running for the next start to re-adopt)")
	fs.StringVar(&f.pools, "pool", "", "warm pools: "+poolSyntax+",... (e.g. base=2,my-app@v2:crun=1; a tag after @, since : names the runtime); off when empty")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.UintVar(&f.uidBase, "uid-base", 100000, "first host uid of the range sandbox root maps to (crun, runc)")
	fs.DurationVar(&f.defaultTimeout, "default-timeout", 300*time.Second, "sandbox timeout when the request sets none")
	fs.DurationVar(&f.maxTimeout, "max-timeout", 24*time.Hour, "largest sandbox timeout a request may ask for")
	fs.DurationVar(&f.runtimeTimeout, "runtime-timeout", 30*time.Second, "bound on each runtime binary command (create, state, delete); a hung runtime fails creates after this")
	fs.IntVar(&f.cpu, "cpu", 1, "default CPUs per sandbox (requests may set cpuCount up to 4x)")
	fs.IntVar(&f.memMB, "memory-mb", 512, "default memory per sandbox in MiB (requests may set memoryMB up to 8x)")
	fs.IntVar(&f.diskMB, "disk-mb", 1024, "default writable-layer size per sandbox in MiB (requests may set diskSizeMB up to 8x)")
	fs.IntVar(&f.pids, "pids", 512, "max tasks per sandbox")
	fs.BoolVar(&f.diskLayers, "disk-layers", false, "put crun and runc sandboxes' writable layers on ext4 images of their disk quota under <data-dir>/layer-images (sparse, loop-mounted; needs mkfs.ext4 and loop devices, else a warning and the tmpfs): their files then fill the disk quota as page cache instead of counting against the memory limit, where past memoryMB every process of the sandbox is OOM-killed; each create costs a loop device and a mount more (slower bursts). runsc layers are unaffected")
	fs.IntVar(&f.maxSandboxes, "max-sandboxes", 1000, "max sandboxes on this node; more creates get 429")
	fs.IntVar(&f.maxCreating, "max-creating", 8, "max creates in flight; more wait in a queue (up to 30 s)")
	fs.IntVar(&f.maxQueued, "max-queued", 512, "max creates waiting for a slot; more get 429 with Retry-After")
	fs.IntVar(&f.maxConnsPerAddr, "max-conns-per-addr", defaultConnLimit()/4, "client connections one remote address (an IPv6 address: its /64) may hold at once (of the daemon's bound, half its descriptor limit); past it new ones are closed at once. Loopback is not counted (a reverse proxy on the host); 0: no per-address bound")
	fs.DurationVar(&f.pauseRetry, "pause-retry", 30*time.Second, "first wait before the deadline's pause of an autoPause sandbox, refused for want of disk (its team's disk quota, --image-quota-mb, a full disk), is tried again; the sandbox keeps running meanwhile, the wait doubles up to 8x, and freeing disk (a paused sandbox killed, a snapshot, volume or template deleted) retries at once")
	fs.DurationVar(&f.pauseRetryFor, "pause-retry-for", 0, "how long past its deadline an autoPause sandbox whose pause is refused for want of disk keeps running, its pause retried, before it is killed (0: --max-timeout)")
	fs.Int64Var(&f.imageQuotaMB, "image-quota-mb", 0, "disk bound in MiB for paused sandboxes and snapshots under <data-dir>/images (0: none); past it pause and snapshot get 507")
	f.egress.register(fs)
	f.tls.register(fs)
	fs.Var(&f.insecureRegistries, "insecure-registry", "registry host[:port] pulled over plain HTTP (repeatable; loopback always is)")
	fs.StringVar(&f.registryMirror, "registry-mirror", "", "registry host[:port] that mirrors Docker Hub, used for its images")
	fs.StringVar(&f.registryOpenFlag, "registry-open", "", "CIDRs a team's template build may pull images from although they are private, loopback or link-local (e.g. 10.1.2.3/32 for a registry on the LAN), comma separated; never the sandbox subnet. The default team's builds and the --registry-mirror and --insecure-registry hosts are not restricted")
	fs.StringVar(&f.templateRegistry, "template-registry", "", "host[:port]/prefix of an OCI registry that ready template builds are pushed to and that a node pulls a build's missing layers from on first use (a cluster's nodes share templates through it; empty: none); credentials: the daemon user's docker config, as docker login writes it")
	fs.BoolVar(&f.templateRegistryInsecure, "template-registry-insecure", false, "reach --template-registry over plain HTTP (tests, a trusted network)")
	fs.IntVar(&f.buildConcurrency, "build-concurrency", 2, "template builds at once; more wait")
	fs.Int64Var(&f.templateQuotaMB, "template-quota-mb", 0, "disk bound in MiB for template layers (0: none); builds past it fail")
	fs.Int64Var(&f.volumeMB, "volume-size-mb", 1024, "size (quota) of a volume whose create names none, in MiB")
	fs.Int64Var(&f.volumeMaxMB, "volume-max-mb", 16384, "largest size one volume may ask for, in MiB")
	fs.Int64Var(&f.volumeTotalMB, "volume-total-mb", 32768, "bound on the sum of all volumes' sizes in MiB (their disk is allocated at create)")
	fs.DurationVar(&f.buildStepTimeout, "build-step-timeout", 30*time.Minute, "bound on one template build step")
	fs.StringVar(&f.secretsKeyFile, "secrets-key-file", "", "file of the key sealing secret values (AES-256-GCM; made 0600 on first start; default <data-dir>/secrets.key); SBX_SECRETS_KEY (hex or base64) wins over it")
	f.intercept.register(fs)
	f.obs.register(fs)
	f.cluster.register(fs)
	fs.StringVar(&f.role, "role", "node", "node: run sandboxes (default); api: the stateless API front of a cluster (needs --cluster), placing creates and forwarding each sandbox's API calls and traffic to its node")
	fs.StringVar(&f.frontListen, "front-listen", "", "a cluster node also serves the cluster's API front on this address (the node plays both roles: its own API stays on --listen)")
	f.fs = fs
	teamQuotaFlags(fs, &f.teamQuota)
	fs.Float64Var(&f.teamAPIRate, "team-api-rate", 200, "per team key: API requests a second, burst 5× (past it 429; the refusals are audited once a second, not one by one); admin keys are not limited; 0 = unlimited")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := f.obs.validate(); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := f.cluster.resolve(f.listen); err != nil {
		return nil, err
	}
	if err := f.checkRole(); err != nil {
		return nil, err
	}
	if f.templateRegistry != "" {
		if _, err := (&dist.Remote{Repo: f.templateRegistry}).Ref("t", "b"); err != nil {
			return nil, fmt.Errorf("--template-registry: %w", err)
		}
	}
	var err error
	if f.registryOpen, err = parsePrefixes(f.registryOpenFlag); err != nil {
		return nil, fmt.Errorf("--registry-open: %w", err)
	}
	if f.templatesDir == "" {
		f.templatesDir = filepath.Join(f.dataDir, "templates")
	}
	return f, nil
}

// agentPath finds sbx-agent next to the running binary unless set.
func agentPath(flagValue string) (string, error) {
	p := flagValue
	if p == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		p = filepath.Join(filepath.Dir(exe), "sbx-agent")
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("sbx-agent binary: %w (build it with: go build -o bin/ ./cmd/sbx ./cmd/sbx-agent)", err)
	}
	return p, nil
}

// stringList is a repeatable (or comma-separated) string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// listenAndServe serves the API, sandbox traffic and /mcp on the listeners
// until ctx ends or one fails, telling systemd when it is ready and when it stops.
func listenAndServe(ctx context.Context, f *Config, self *selfAPI, mgr *sandbox.Manager, bs *builder.Service, vols *volume.Manager, keys *api.Keys, tenants *api.Tenants, aud *audit.Log, tel *telemetry.Store, log *slog.Logger) error {
	apiSrv := api.New(mgr, keys, aud, log)
	apiSrv.SetTenants(tenants)
	apiSrv.SetTeamRate(f.teamAPIRate, 5*f.teamAPIRate)
	apiSrv.SetBuilder(bs)
	apiSrv.SetVolumes(vols)
	apiSrv.SetSecrets(f.secrets)
	apiSrv.SetTelemetry(tel)
	apiSrv.SetObservability(f.metrics, f.metrics.Handler(), debugSource{f: f, ring: f.ring})
	px := proxy.New(mgr, f.domain, api.WriteError, log)
	px.SetObserver(f.metrics)
	f.metrics.CountFunc("proxy_agent_unresponsive_total", "Requests to sandbox agents failed because the agent answered neither them nor /health (stopped or wedged; internal/proxy stall.go).",
		func() float64 { return float64(px.Unresponsive()) })
	px.SetLimits(proxy.DefaultLimits())
	var mcpH http.Handler
	if f.MCP != nil {
		mcpH = f.MCP(self.base, self.rt, apiSrv.Admit) // the address the dashboard calls too
	}
	var dashAPI http.Handler = apiSrv
	if self.api != nil {
		dashAPI = self.api
	}
	dashH := dashboardHandler(self, dashAPI, apiSrv, log)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case px.Match(r):
			px.ServeHTTP(w, r)
		case r.URL.Path == "/mcp" && mcpH != nil:
			mcpH.ServeHTTP(w, r)
		case dashboard.Match(r):
			dashH.ServeHTTP(w, r)
		default:
			apiSrv.ServeHTTP(w, r)
		}
	})
	srvs, err := listen(f, f.cluster.guard(h), log)
	if err != nil {
		return err
	}
	log.Info("sbx serving", "listen", srvs[0].ln.Addr().String(), "data-dir", f.dataDir, "runtimes", mgr.RuntimeNames(), "default-runtime", f.runtime)
	errc := make(chan error, len(srvs))
	for _, s := range srvs {
		go func() { errc <- s.srv.Serve(s.ln) }()
	}
	notifySystemd(sdnotify.Ready, log) // listening: connections queue until Serve accepts
	defer notifySystemd(sdnotify.Stopping, log)
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
		log.Info("shutting down; sandboxes keep running and are re-adopted on the next start")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs := []error{serveErr}
	for _, s := range srvs {
		errs = append(errs, s.srv.Shutdown(sctx))
	}
	return errors.Join(errs...)
}

// boundServer is a server and the listener it serves.
type boundServer struct {
	srv *http.Server
	ln  net.Listener
}

// listen opens --listen (plain HTTP) and, with TLS configured, --tls-listen
// (HTTPS), both serving h. On error nothing stays open.
func listen(f *Config, h http.Handler, log *slog.Logger) ([]boundServer, error) {
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, err
	}
	conns := f.clientConns() // both listeners together, and --front-listen's
	out := []boundServer{{newHTTPServer(h, defaultLimits), conns.wrap(ln)}}
	if f.tlsConf == nil {
		return out, nil
	}
	tln, err := net.Listen("tcp", f.tls.listen)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--tls-listen: %w", err)
	}
	log.Info("sbx serving HTTPS", "listen", tln.Addr().String(), "domain", f.domain)
	srv := newHTTPServer(h, defaultLimits)
	// failed handshakes (scanners, clients without the CA) are routine on
	// a public port: debug, not the server's default stderr line each
	srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	return append(out, boundServer{srv, tls.NewListener(conns.wrap(tln), f.tlsConf)}), nil
}

// clientConns is the one bound of every listener that takes client
// connections (--listen, --tls-listen, --front-listen, and a front's
// --listen): half the descriptor limit together, --max-conns-per-addr
// of them from one address.
func (f *Config) clientConns() *connLimit {
	f.connsOnce.Do(func() { f.conns = newConnLimit(defaultConnLimit(), f.maxConnsPerAddr) })
	return f.conns
}

// protectDaemon makes the kernel's OOM killer prefer sandbox processes.
func protectDaemon(log *slog.Logger) {
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-500"), 0); err != nil {
		log.Warn("cannot lower the daemon's oom_score_adj", "err", err)
	}
}
