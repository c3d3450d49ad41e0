package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// CreatePhase implements sandbox.Observer.
func (m *Metrics) CreatePhase(rt, phase string, d time.Duration) {
	o, ok := m.phases[[2]string{rt, phase}]
	if !ok {
		o = m.createPhase.WithLabelValues(rt, phase)
	}
	o.Observe(d.Seconds())
}

// Created implements sandbox.Observer.
func (m *Metrics) Created(rt string, pooled bool, d time.Duration, err error) {
	src := "cold"
	if pooled {
		src = "pool"
	}
	m.createTotal.WithLabelValues(rt, src, result(err)).Observe(d.Seconds())
}

// Lifecycle implements sandbox.Observer.
func (m *Metrics) Lifecycle(op, rt string, d time.Duration, err error) {
	m.lifecycle.WithLabelValues(op, rt, result(err)).Observe(d.Seconds())
}

// Refused implements sandbox.Observer.
func (m *Metrics) Refused(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// PoolClaim implements sandbox.Observer.
func (m *Metrics) PoolClaim(tmpl, rt string, hit bool) {
	r := "miss"
	if hit {
		r = "hit"
	}
	m.poolClaims.WithLabelValues(m.templates.value(tmpl), rt, r).Inc()
}

// PoolRefill implements sandbox.Observer.
func (m *Metrics) PoolRefill(tmpl, rt string, err error) {
	m.poolRefills.WithLabelValues(m.templates.value(tmpl), rt, result(err)).Inc()
}

// PauseRefused implements sandbox.Observer.
func (m *Metrics) PauseRefused(cause string, deferred bool) {
	outcome := "killed"
	if deferred {
		outcome = "deferred"
	}
	m.pauseRefuse.WithLabelValues(cause, outcome).Inc()
}

// Died implements sandbox.Observer.
func (m *Metrics) Died(rt string) { m.deaths.WithLabelValues(rt).Inc() }

// Source is what the scrape-time gauges read (implemented by
// *sandbox.Manager).
type Source interface {
	List() []sandbox.Info
	PoolStats() map[sandbox.PoolKey]int
	Admission() sandbox.AdmissionStats
}

// WatchManager registers the gauges read from src at each scrape:
// sandboxes by state, runtime and template, pool depth, admission queue.
func (m *Metrics) WatchManager(src Source) {
	m.reg.MustRegister(&managerCollector{src: src, templates: m.templates})
}

var (
	sandboxesDesc = prometheus.NewDesc(ns+"_sandboxes", "Sandboxes on this node by state, runtime and template (templates past a cap count as other).", []string{"state", "runtime", "template"}, nil)
	poolDesc      = prometheus.NewDesc(ns+"_pool_ready", "Ready sandboxes in each warm pool.", []string{"template", "runtime"}, nil)
	queueDesc     = prometheus.NewDesc(ns+"_admission_queue_length", "Creates waiting for a create slot.", nil, nil)
	creatingDesc  = prometheus.NewDesc(ns+"_admission_in_flight", "Creates holding a create slot.", nil, nil)
)

// managerCollector reads the manager's state at scrape time (no
// bookkeeping on the create path).
type managerCollector struct {
	src       Source
	templates *labelCap
}

func (c *managerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sandboxesDesc
	ch <- poolDesc
	ch <- queueDesc
	ch <- creatingDesc
}

func (c *managerCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[[3]string]int{}
	for _, in := range c.src.List() {
		counts[[3]string{in.State.String(), in.Runtime, c.templates.value(in.TemplateID)}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(sandboxesDesc, prometheus.GaugeValue, float64(n), k[0], k[1], k[2])
	}
	for k, n := range c.src.PoolStats() {
		ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(n), c.templates.value(k.Template), k.Runtime)
	}
	a := c.src.Admission()
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(a.Queued))
	ch <- prometheus.MustNewConstMetric(creatingDesc, prometheus.GaugeValue, float64(a.Creating))
}
