package network

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/egress"
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

// BenchmarkSetPolicy measures one atomic policy replacement on a live
// sandbox: E2B's default (internet minus the blocked ranges), and 100
// allowOut plus 100 denyOut CIDRs and a domain.
func BenchmarkSetPolicy(b *testing.B) {
	m := testManager(b, testConfig(45))
	l := setup(b, m, "bench-policy")
	var allow, deny []string
	for i := range 100 {
		allow = append(allow, fmt.Sprintf("11.%d.0.0/16", i))
		deny = append(deny, fmt.Sprintf("12.%d.1.0/24", i))
	}
	big, err := egress.Parse(nil, append(allow, "example.com"), deny)
	if err != nil {
		b.Fatal(err)
	}
	for name, p := range map[string]egress.Policy{"default": {}, "200-rules": big} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := m.SetPolicy(context.Background(), l.ID, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEgressConnect measures a TCP connect and first byte from inside
// a sandbox to the (fake) internet through the policy chain and the
// masquerade, the path every outbound connection takes.
func BenchmarkEgressConnect(b *testing.B) {
	cfg := testConfig(46)
	cfg.Egress = Egress{ConnRate: 1 << 20, ConnBurst: 1 << 20} // the caps are not what is measured
	m := testManager(b, cfg)
	in := newInternet(b, 46)
	l := setup(b, m, "bench-connect")
	if err := m.SetPolicy(context.Background(), l.ID, egress.Policy{DenyNets: []netip.Prefix{netip.MustParsePrefix("12.0.0.0/8")}}); err != nil {
		b.Fatal(err)
	}
	if err := inNet(b, l, func() error {
		for b.Loop() {
			if err := dialRead(in.addr(in.a)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFirstPolicy measures the create path's SetPolicy: E2B's default
// policy applied to a fresh network (additions only), reported as
// policy-ms; Setup and Teardown are not counted.
func BenchmarkFirstPolicy(b *testing.B) {
	m := testManager(b, testConfig(47))
	ctx := context.Background()
	var took time.Duration
	for i := 0; b.Loop(); i++ {
		l := setup(b, m, fmt.Sprintf("first%d", i))
		t0 := time.Now()
		if err := m.SetPolicy(ctx, l.ID, egress.Policy{}); err != nil {
			b.Fatal(err)
		}
		took += time.Since(t0)
		if err := m.Teardown(ctx, l.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "policy-ms")
}

// BenchmarkSetupConcurrent measures Setup+Teardown of 8 networks at a time,
// as a daemon's create slots make them, reported as the process's CPU per
// network (cpu-ms: user+system from getrusage): concurrent setups used to
// spin in the kernel on each other's RTNL (rtnl.go).
func BenchmarkSetupConcurrent(b *testing.B) {
	cfg := testConfig(22)
	cfg.Subnet = netip.MustParsePrefix("10.231.28.0/22")
	m := testManager(b, cfg)
	ctx := context.Background()
	cpu0 := processCPU(b)
	var n atomic.Int64
	b.SetParallelism(4) // × GOMAXPROCS (2 on the benchmark machine): 8
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("conc%d", n.Add(1))
			if _, err := m.Setup(ctx, id); err != nil {
				b.Error(err)
				return
			}
			if err := m.Teardown(ctx, id); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms")
}

// processCPU is the process's user+system CPU so far.
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
