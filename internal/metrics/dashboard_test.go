package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardUsesRealMetrics: every sbx_ series the Grafana dashboard
// queries is one this package registers (a rename breaks this test, not
// the operator's dashboard).
func TestDashboardUsesRealMetrics(t *testing.T) {
	b, err := os.ReadFile("../../deploy/grafana/sbx.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := New(reg, []string{"runsc"})
	m.WatchManager(&fakeManager{})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	// Vectors without children yet are not gathered: list them by Describe.
	ch := make(chan *prometheus.Desc, 256)
	go func() { reg.Describe(ch); close(ch) }()
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range ch {
		if mm := name.FindStringSubmatch(d.String()); mm != nil {
			have[mm[1]] = true
		}
	}
	used := regexp.MustCompile(`\b(sbx_[a-z_]+|go_[a-z_]+|process_[a-z_]+)`).FindAllString(string(b), -1)
	if len(used) < 20 {
		t.Fatalf("only %d metric references in the dashboard", len(used))
	}
	for _, u := range used {
		base := u
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			base = strings.TrimSuffix(base, suf)
		}
		if !have[base] && !have[u] {
			t.Errorf("dashboard queries %s, which is not registered", u)
		}
	}
}
