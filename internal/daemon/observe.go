package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sbx-dev/sbx/internal/audit"
	"github.com/sbx-dev/sbx/internal/metrics"
	"github.com/sbx-dev/sbx/internal/version"
)

// DefaultAnchorDir holds the audit signing key and checkpoints, apart from
// the data dir (see docs/SECURITY.md, "Audit anchor").
const DefaultAnchorDir = "/etc/sbx/audit"

// obsFlags are the serve flags of logs, metrics and the audit anchor.
type obsFlags struct {
	logFormat, metricsListen string
	anchorDir, auditSyslog   string
	checkpointEvery          time.Duration
	auditMaxMB               float64
	auditKeep                int
}

func (o *obsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json (slog)")
	fs.StringVar(&o.metricsListen, "metrics-listen", "", "also serve /metrics and /debug/pprof/ WITHOUT authentication on this address; bind it to loopback (127.0.0.1:9090) or a private interface (off when empty; /metrics is always on the API for the admin key)")
	fs.StringVar(&o.anchorDir, "audit-anchor-dir", DefaultAnchorDir, "directory apart from the data dir for the audit log's ed25519 signing key (made on first start) and its signed checkpoints; \"none\" disables anchoring")
	fs.DurationVar(&o.checkpointEvery, "audit-checkpoint-every", 10*time.Second, "how often the audit log's head is signed into a checkpoint (also at shutdown)")
	fs.Float64Var(&o.auditMaxMB, "audit-max-mb", 100, "rotate the audit log when it reaches this many MiB (fractions allowed, at least 0.01): it becomes the segment audit.log.<first seq> beside it and a new file continues the chain; 0 = never rotate")
	fs.IntVar(&o.auditKeep, "audit-keep", 10, "rotated audit log segments kept besides the active file (older ones are deleted after a signed checkpoint records the chain's new start); 0 = keep all")
	fs.StringVar(&o.auditSyslog, "audit-syslog", "", "also stream every audit record to syslog: local, udp://host:port or tcp://host:port (off when empty)")
}

func (o *obsFlags) validate() error {
	if o.logFormat != "text" && o.logFormat != "json" {
		return fmt.Errorf("--log-format must be text or json, not %q", o.logFormat)
	}
	if o.checkpointEvery < time.Second {
		return errors.New("--audit-checkpoint-every must be at least 1s")
	}
	if o.auditMaxMB != 0 && !(o.auditMaxMB >= 0.01 && o.auditMaxMB <= 1<<20) {
		return fmt.Errorf("--audit-max-mb must be 0 (never rotate) or from 0.01 to 1048576 (1 TiB), not %v", o.auditMaxMB)
	}
	if o.auditKeep < 0 {
		return fmt.Errorf("--audit-keep must be 0 (keep all) or more, not %d", o.auditKeep)
	}
	return nil
}

// openAudit opens the audit log, checks it against its signed checkpoints
// (refusing a log that was cut short, rolled back or replaced), anchors
// it, sets its rotation, and connects the syslog stream and the metrics. The returned close
// writes the last checkpoint.
func openAudit(ctx context.Context, f *Config, m *metrics.Metrics, log *slog.Logger) (*audit.Log, func(), error) {
	aud, err := audit.Open(filepath.Join(f.dataDir, audit.FileName))
	if err != nil {
		return nil, nil, err
	}
	hooks := audit.Hooks{Latency: m.AuditWrite, Error: func(err error) { log.Error("audit log", "err", err) }}
	var sl *audit.Syslog
	if f.obs.auditSyslog != "" {
		if sl, err = audit.DialSyslog(f.obs.auditSyslog); err != nil {
			aud.Close()
			return nil, nil, err
		}
		hooks.Line = sl.Line
		m.CountFunc("audit_syslog_dropped_total", "Audit records not streamed to syslog (its queue was full).", func() float64 { return float64(sl.Dropped()) })
	}
	aud.SetHooks(hooks)
	closeAll := func() {
		if err := aud.Close(); err != nil {
			log.Error("close audit log", "err", err)
		}
		if sl != nil {
			_ = sl.Close()
		}
	}
	rotate := func() { aud.SetRotation(int64(f.obs.auditMaxMB*(1<<20)), f.obs.auditKeep) }
	if f.obs.anchorDir == "none" {
		log.Warn("audit log is not anchored (--audit-anchor-dir none): a log cut short would still verify")
		rotate()
		return aud, closeAll, nil
	}
	a, err := audit.OpenAnchor(f.obs.anchorDir, f.dataDir)
	if err != nil {
		err = fmt.Errorf("%w (--audit-anchor-dir must be a writable directory apart from the data dir, or none)", err)
	} else {
		err = aud.SetAnchor(a)
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	rotate() // after the anchor: a prune signs the chain's new start before deleting
	go aud.RunCheckpoints(ctx, f.obs.checkpointEvery, func(err error) { log.Error("audit checkpoint", "err", err) })
	log.Info("audit log anchored", "checkpoints", a.Path())
	return aud, closeAll, nil
}

// newMetrics makes the daemon's registry and metrics.
func newMetrics() *metrics.Metrics {
	return metrics.New(prometheus.NewRegistry(), []string{"runsc", "crun", "runc"})
}

// serveMetrics serves /metrics and /debug/pprof/ without authentication on
// addr until ctx ends (only when --metrics-listen is set). pprof is never
// on the API listener.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("metrics and pprof serving (no authentication)", "listen", ln.Addr().String())
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	return nil
}

// debugSource serves the admin debug endpoints: flags (secrets redacted),
// version and the log ring.
type debugSource struct {
	f    *Config
	ring *logRing
}

// secretFlag matches flag names whose values are never shown.
var secretFlag = regexp.MustCompile(`(?i)key|token|secret|password|credential`)

// Config implements api.DebugSource.
func (d debugSource) Config() any {
	flags := map[string]string{}
	d.f.fs.VisitAll(func(fl *flag.Flag) {
		v := fl.Value.String()
		switch {
		case secretFlag.MatchString(fl.Name) && v != "" && !isPath(v):
			v = "[redacted]"
		default:
			v = redactURL(v)
		}
		flags[fl.Name] = v
	})
	return map[string]any{"version": version.Get(), "flags": flags, "apiKeyFromEnv": os.Getenv("SBX_API_KEY") != ""}
}

// isPath tells a file or directory path (shown) from a secret value.
func isPath(v string) bool { return filepath.IsAbs(v) }

// redactURL hides the password of a URL-shaped value (user:pass@host).
func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	}
	return u.String()
}

// RecentLogs implements api.DebugSource.
func (d debugSource) RecentLogs(n int) []string { return d.ring.Last(n) }
