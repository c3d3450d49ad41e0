package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the registry in the Prometheus text (or OpenMetrics)
// format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// APIRequest observes one API request. route is the matched ServeMux
// pattern ("" for none: counted as "unmatched"), so the label is bounded.
func (m *Metrics) APIRequest(route string, code int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.api.WithLabelValues(route, strconv.Itoa(code)).Observe(d.Seconds())
}

// ProxyStream observes a proxied request: call it when the request starts
// and call the returned func when it ends.
func (m *Metrics) ProxyStream() (done func()) {
	m.proxyReqs.Inc()
	m.proxyStreams.Inc()
	return m.proxyStreams.Dec
}

// ProxyBytes counts bytes forwarded to (in) and from (out) sandboxes.
func (m *Metrics) ProxyBytes(in, out int64) {
	if in > 0 {
		m.bytesIn.Add(float64(in))
	}
	if out > 0 {
		m.bytesOut.Add(float64(out))
	}
}
