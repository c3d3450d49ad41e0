package network

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkSetupTeardown measures one sandbox network's Setup and Teardown,
// reported apart as setup-ms and teardown-ms.
func BenchmarkSetupTeardown(b *testing.B) {
	m := testManager(b, testConfig(20))
	ctx := context.Background()
	var setup, teardown time.Duration
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("bench%d", i)
		t0 := time.Now()
		if _, err := m.Setup(ctx, id); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := m.Teardown(ctx, id); err != nil {
			b.Fatal(err)
		}
		setup, teardown = setup+t1.Sub(t0), teardown+time.Since(t1)
	}
	b.ReportMetric(float64(setup.Microseconds())/1000/float64(b.N), "setup-ms")
	b.ReportMetric(float64(teardown.Microseconds())/1000/float64(b.N), "teardown-ms")
}

// BenchmarkSetupWith100Live measures Setup+Teardown while 100 other
// sandboxes have networks (sets and chains are not empty).
func BenchmarkSetupWith100Live(b *testing.B) {
	cfg := testConfig(21)
	cfg.Subnet = netip.MustParsePrefix("10.231.24.0/22")
	m := testManager(b, cfg)
	ctx := context.Background()
	for i := range 100 {
		if _, err := m.Setup(ctx, fmt.Sprintf("live%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("bench%d", i)
		if _, err := m.Setup(ctx, id); err != nil {
			b.Fatal(err)
		}
		if err := m.Teardown(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}
