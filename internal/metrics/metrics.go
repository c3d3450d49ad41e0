// Package metrics is sbx's Prometheus instrumentation. Everything is
// registered on a registry given at wiring (never the global default), and
// the rest of the daemon only sees small observer interfaces implemented
// here. Labels are bounded: runtimes, fixed phase/operation/verdict names,
// API route patterns, template names capped by a labelCap; never sandbox ids.
package metrics

import (
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sbx-dev/sbx/internal/runtime"
)

const ns = "sbx"

// Buckets (seconds).
var (
	startBuckets = prometheus.ExponentialBuckets(0.005, 2, 14)   // 5 ms .. 41 s
	opBuckets    = prometheus.ExponentialBuckets(0.01, 2, 14)    // 10 ms .. 82 s
	writeBuckets = prometheus.ExponentialBuckets(0.0001, 2, 15)  // 0.1 ms .. 1.6 s
	apiBuckets   = prometheus.ExponentialBuckets(0.001, 2.5, 12) // 1 ms .. 60 s
	buildBuckets = prometheus.ExponentialBuckets(1, 2, 12)       // 1 s .. 68 min
)

// Metrics holds every sbx collector.
type Metrics struct {
	reg *prometheus.Registry

	createPhase  *prometheus.HistogramVec // runtime, phase
	createTotal  *prometheus.HistogramVec // runtime, source (cold, pool), result
	lifecycle    *prometheus.HistogramVec // op, runtime, result
	refusals     *prometheus.CounterVec   // reason
	poolClaims   *prometheus.CounterVec   // template, runtime, result
	poolRefills  *prometheus.CounterVec   // template, runtime, result
	deaths       *prometheus.CounterVec   // runtime
	pauseRefuse  *prometheus.CounterVec   // cause, outcome
	api          *prometheus.HistogramVec // route, code
	proxyReqs    prometheus.Counter
	proxyBytes   *prometheus.CounterVec // direction
	proxyStreams prometheus.Gauge
	egressDenied *prometheus.CounterVec // reason
	dnsQueries   *prometheus.CounterVec // verdict
	rtCommands   *prometheus.HistogramVec
	rtFailures   *prometheus.CounterVec   // runtime, command, kind (error, timeout)
	builds       *prometheus.HistogramVec // result
	buildSteps   *prometheus.CounterVec   // cache (hit, miss)
	storeWrites  *prometheus.HistogramVec // op, result
	auditWrites  *prometheus.HistogramVec // result
	templates    *labelCap
	phases       map[[2]string]prometheus.Observer // pre-bound (runtime, phase)
	bytesIn      prometheus.Counter
	bytesOut     prometheus.Counter
	auditOK      prometheus.Observer
	auditFail    prometheus.Observer
}

// New registers sbx's collectors and the Go runtime and process collectors
// on reg. runtimes are the node's runtime names (their label children are
// bound now, so the hot paths do no lookups that allocate).
func New(reg *prometheus.Registry, runtimes []string) *Metrics {
	m := &Metrics{reg: reg, templates: newLabelCap(maxTemplates)}
	f := factory{reg}
	m.createPhase = f.hist("sandbox_create_phase_seconds", "Time spent in one phase of a sandbox start (queue, layer, network, runtime, agent, init).", startBuckets, "runtime", "phase")
	m.createTotal = f.hist("sandbox_create_seconds", "Duration of sandbox creates (source: cold or pool).", startBuckets, "runtime", "source", "result")
	m.lifecycle = f.hist("sandbox_operation_seconds", "Duration of pause, resume, fork and snapshot.", opBuckets, "op", "runtime", "result")
	m.refusals = f.counter("admission_refusals_total", "Creates refused by admission (full: node or queue full; wait: no slot in time).", "reason")
	m.poolClaims = f.counter("pool_claims_total", "Creates that looked in a warm pool (result: hit or miss).", "template", "runtime", "result")
	m.poolRefills = f.counter("pool_refills_total", "Warm pool refills (result: ok or error).", "template", "runtime", "result")
	m.deaths = f.counter("sandbox_deaths_total", "Sandboxes (running or pooled) reaped because their init ended unasked: agent exited, runtime killed.", "runtime")
	m.pauseRefuse = f.counter("autopause_refusals_total", "Deadline pauses of autoPause sandboxes refused for want of disk (cause: team_disk_quota, image_quota, no_space; outcome: deferred, the sandbox runs on and the pause is retried; killed, its retries were over).", "cause", "outcome")
	m.api = f.hist("api_request_seconds", "API requests by route pattern and status code.", apiBuckets, "route", "code")
	m.proxyReqs = f.plain("proxy_requests_total", "Requests forwarded to sandboxes.")
	m.proxyBytes = f.counter("proxy_bytes_total", "Bytes forwarded through the sandbox proxy (in: to sandboxes, out: from them).", "direction")
	m.proxyStreams = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "proxy_open_streams", Help: "Proxied requests in progress."})
	reg.MustRegister(m.proxyStreams)
	m.egressDenied = f.counter("egress_denied_total", "Sandbox connections refused by the egress guard, by reason.", "reason")
	m.dnsQueries = f.counter("dns_queries_total", "Sandbox DNS queries by verdict.", "verdict")
	m.rtCommands = f.hist("runtime_command_seconds", "Runtime binary commands (create, state, delete, ...).", opBuckets, "runtime", "command")
	m.rtFailures = f.counter("runtime_command_failures_total", "Runtime binary commands that failed (kind: error or timeout).", "runtime", "command", "kind")
	m.builds = f.hist("template_build_seconds", "Template build durations by result.", buildBuckets, "result")
	m.buildSteps = f.counter("template_build_steps_total", "Template build layer steps (cache: hit or miss).", "cache")
	m.storeWrites = f.hist("store_write_seconds", "SQLite writes of sandbox records.", writeBuckets, "op", "result")
	m.auditWrites = f.hist("audit_write_seconds", "Audit record writes.", writeBuckets, "result")
	m.bind(runtimes)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// CountFunc registers a counter read from fn at scrape time (sbx_<name>).
func (m *Metrics) CountFunc(name, help string, fn func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, fn))
}

// Registry is where everything is registered (for the /metrics handler).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// phaseNames are the create phases (sandbox.Observer.CreatePhase).
var phaseNames = []string{"queue", "layer", "network", "runtime", "agent", "init"}

// bind pre-binds the label children used on every request or start.
func (m *Metrics) bind(runtimes []string) {
	m.phases = map[[2]string]prometheus.Observer{}
	for _, rt := range runtimes {
		for _, p := range phaseNames {
			m.phases[[2]string{rt, p}] = m.createPhase.WithLabelValues(rt, p)
		}
	}
	m.bytesIn, m.bytesOut = m.proxyBytes.WithLabelValues("in"), m.proxyBytes.WithLabelValues("out")
	m.auditOK, m.auditFail = m.auditWrites.WithLabelValues("ok"), m.auditWrites.WithLabelValues("error")
	for _, r := range []string{"full", "wait"} {
		m.refusals.WithLabelValues(r) // present at 0 from the start
	}
}

// result is the "result" label of err.
func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// RuntimeCommand observes one runtime binary command (oci.Config.OnCommand).
func (m *Metrics) RuntimeCommand(rt, command string, d time.Duration, err error) {
	m.rtCommands.WithLabelValues(rt, command).Observe(d.Seconds())
	switch {
	case errors.Is(err, runtime.ErrTimeout):
		m.rtFailures.WithLabelValues(rt, command, "timeout").Inc()
	case err != nil:
		m.rtFailures.WithLabelValues(rt, command, "error").Inc()
	}
}

// AuditWrite observes one audit append (audit.Hooks.Latency).
func (m *Metrics) AuditWrite(d time.Duration, failed bool) {
	if failed {
		m.auditFail.Observe(d.Seconds())
		return
	}
	m.auditOK.Observe(d.Seconds())
}

// StoreWrite observes one sandbox record write (store.Store.OnWrite).
func (m *Metrics) StoreWrite(op string, d time.Duration, err error) {
	m.storeWrites.WithLabelValues(op, result(err)).Observe(d.Seconds())
}

// Build observes a finished template build.
func (m *Metrics) Build(d time.Duration, err error) {
	m.builds.WithLabelValues(result(err)).Observe(d.Seconds())
}

// BuildStep counts a layer step taken from the cache (hit) or run.
func (m *Metrics) BuildStep(cached bool) {
	if cached {
		m.buildSteps.WithLabelValues("hit").Inc()
		return
	}
	m.buildSteps.WithLabelValues("miss").Inc()
}

// EgressDenied counts a connection refused by the egress guard.
func (m *Metrics) EgressDenied(reason string) { m.egressDenied.WithLabelValues(bounded(reason)).Inc() }

// DNSQuery counts a sandbox DNS query by verdict: allowed, refused,
// upstream_error (the filter's verdict carries the error text: dropped).
func (m *Metrics) DNSQuery(verdict string) {
	switch {
	case verdict == "allowed" || verdict == "refused":
	case strings.HasPrefix(verdict, "upstream error"):
		verdict = "upstream_error"
	default:
		verdict = "other"
	}
	m.dnsQueries.WithLabelValues(verdict).Inc()
}

// bounded guards a label whose values come from a fixed set in code:
// anything unexpectedly long collapses to "other".
func bounded(s string) string {
	if len(s) > 40 {
		return "other"
	}
	return s
}

// factory registers vectors under the sbx namespace.
type factory struct{ reg *prometheus.Registry }

func (f factory) hist(name, help string, b []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: b}, labels)
	f.reg.MustRegister(v)
	return v
}

func (f factory) counter(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	f.reg.MustRegister(v)
	return v
}

func (f factory) plain(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}
