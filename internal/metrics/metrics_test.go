package metrics

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// fakeManager is a Source with fixed contents.
type fakeManager struct {
	infos []sandbox.Info
	pools map[sandbox.PoolKey]int
	adm   sandbox.AdmissionStats
}

func (f *fakeManager) List() []sandbox.Info               { return f.infos }
func (f *fakeManager) PoolStats() map[sandbox.PoolKey]int { return f.pools }
func (f *fakeManager) Admission() sandbox.AdmissionStats  { return f.adm }

func info(state store.State, rt, tmpl string) sandbox.Info {
	return sandbox.Info{Sandbox: store.Sandbox{State: state, Runtime: rt, TemplateID: tmpl}}
}

// TestScrapeAfterKnownActions: each observed action moves exactly its
// series.
func TestScrapeAfterKnownActions(t *testing.T) {
	m := New(prometheus.NewRegistry(), []string{"runsc", "crun"})
	fm := &fakeManager{
		infos: []sandbox.Info{info("running", "runsc", "base"), info("running", "runsc", "base"), info("paused", "crun", "py")},
		pools: map[sandbox.PoolKey]int{{Template: "base", Runtime: "runsc"}: 3},
		adm:   sandbox.AdmissionStats{Creating: 2, Queued: 5},
	}
	m.WatchManager(fm)
	m.CreatePhase("runsc", "queue", 10*time.Millisecond)
	m.CreatePhase("runsc", "agent", 300*time.Millisecond)
	m.Created("runsc", false, time.Second, nil)
	m.Created("runsc", true, 50*time.Millisecond, nil)
	m.Created("crun", false, time.Second, errors.New("boom"))
	m.Lifecycle("pause", "runsc", 2*time.Second, nil)
	m.Refused("full")
	m.PoolClaim("base", "runsc", true)
	m.PoolClaim("base", "runsc", false)
	m.PoolRefill("base", "runsc", nil)
	m.RuntimeCommand("runsc", "delete", time.Second, fmt.Errorf("x: %w", runtime.ErrTimeout))
	m.RuntimeCommand("runsc", "state", time.Millisecond, errors.New("exit 1"))
	m.AuditWrite(time.Millisecond, false)
	m.StoreWrite("put", time.Millisecond, nil)
	m.EgressDenied("name not allowed")
	m.DNSQuery("allowed")
	m.DNSQuery("upstream error: i/o timeout")
	m.Build(time.Minute, nil)
	m.BuildStep(true)
	m.APIRequest("POST /sandboxes", 201, 100*time.Millisecond)
	done := m.ProxyStream()
	m.ProxyBytes(10, 20)

	want := map[string]float64{
		`sbx_sandboxes{runtime="runsc",state="running",template="base"}`:                      2,
		`sbx_sandboxes{runtime="crun",state="paused",template="py"}`:                          1,
		`sbx_pool_ready{runtime="runsc",template="base"}`:                                     3,
		`sbx_admission_queue_length`:                                                          5,
		`sbx_admission_in_flight`:                                                             2,
		`sbx_sandbox_create_phase_seconds_count{phase="queue",runtime="runsc"}`:               1,
		`sbx_sandbox_create_phase_seconds_count{phase="agent",runtime="runsc"}`:               1,
		`sbx_sandbox_create_phase_seconds_count{phase="layer",runtime="runsc"}`:               0,
		`sbx_sandbox_create_seconds_count{result="ok",runtime="runsc",source="cold"}`:         1,
		`sbx_sandbox_create_seconds_count{result="ok",runtime="runsc",source="pool"}`:         1,
		`sbx_sandbox_create_seconds_count{result="error",runtime="crun",source="cold"}`:       1,
		`sbx_sandbox_operation_seconds_sum{op="pause",result="ok",runtime="runsc"}`:           2,
		`sbx_admission_refusals_total{reason="full"}`:                                         1,
		`sbx_admission_refusals_total{reason="wait"}`:                                         0,
		`sbx_pool_claims_total{result="hit",runtime="runsc",template="base"}`:                 1,
		`sbx_pool_claims_total{result="miss",runtime="runsc",template="base"}`:                1,
		`sbx_pool_refills_total{result="ok",runtime="runsc",template="base"}`:                 1,
		`sbx_runtime_command_failures_total{command="delete",kind="timeout",runtime="runsc"}`: 1,
		`sbx_runtime_command_failures_total{command="state",kind="error",runtime="runsc"}`:    1,
		`sbx_audit_write_seconds_count{result="ok"}`:                                          1,
		`sbx_store_write_seconds_count{op="put",result="ok"}`:                                 1,
		`sbx_egress_denied_total{reason="name not allowed"}`:                                  1,
		`sbx_dns_queries_total{verdict="allowed"}`:                                            1,
		`sbx_dns_queries_total{verdict="upstream_error"}`:                                     1,
		`sbx_template_build_seconds_count{result="ok"}`:                                       1,
		`sbx_template_build_steps_total{cache="hit"}`:                                         1,
		`sbx_api_request_seconds_count{code="201",route="POST /sandboxes"}`:                   1,
		`sbx_proxy_requests_total`:                                                            1,
		`sbx_proxy_open_streams`:                                                              1,
		`sbx_proxy_bytes_total{direction="in"}`:                                               10,
		`sbx_proxy_bytes_total{direction="out"}`:                                              20,
	}
	got := scrape(t, m)
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	done()
	if g := scrape(t, m)["sbx_proxy_open_streams"]; g != 0 {
		t.Errorf("open streams after done = %v", g)
	}
	for k := range got {
		if strings.Contains(k, "sandbox_id") || strings.Contains(k, `id="`) {
			t.Errorf("a sandbox id label: %s", k)
		}
	}
	for _, fam := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := got[fam]; !ok {
			t.Errorf("%s missing (Go/process collectors)", fam)
		}
	}
}

// TestTemplateLabelCapped: past maxTemplates names, templates are "other".
func TestTemplateLabelCapped(t *testing.T) {
	m := New(prometheus.NewRegistry(), nil)
	fm := &fakeManager{}
	for i := range maxTemplates + 30 {
		fm.infos = append(fm.infos, info("running", "runsc", fmt.Sprintf("t%d", i)))
	}
	m.WatchManager(fm)
	got := scrape(t, m)
	n := 0
	for k := range got {
		if strings.HasPrefix(k, "sbx_sandboxes{") {
			n++
		}
	}
	if n != maxTemplates+1 || got[`sbx_sandboxes{runtime="runsc",state="running",template="other"}`] != 30 {
		t.Fatalf("%d series; other=%v", n, got[`sbx_sandboxes{runtime="runsc",state="running",template="other"}`])
	}
}

// TestHotPathsDoNotAllocate: the per-start and per-request observations
// use pre-bound series.
func TestHotPathsDoNotAllocate(t *testing.T) {
	m := New(prometheus.NewRegistry(), []string{"runsc"})
	if n := testing.AllocsPerRun(100, func() {
		m.CreatePhase("runsc", "layer", time.Millisecond)
		m.ProxyBytes(1, 2)
		m.AuditWrite(time.Microsecond, false)
	}); n != 0 {
		t.Fatalf("%v allocations per observation", n)
	}
}

// scrape renders the registry in the text format and parses "name{labels}
// value" lines.
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return ParseText(rec.Body.String())
}
