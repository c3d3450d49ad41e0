package socks

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/guard"
	"github.com/sbx-dev/sbx/internal/fdlimit"
)

// TestTunnelSharedBound: tunnelled connections are counted by Admit (the
// daemon's bound by team and in all, shared with the guard) besides
// --egress-max-conns per sandbox: past it a connection is refused
// (guard.ReasonTooMany) and not left registered, and a closed one gives
// its count back. Before, the tunnel bounded per sandbox only (1024).
func TestTunnelSharedBound(t *testing.T) {
	up := echoServer(t)
	_, paddr := proxyTo(t, up, "", "")
	pol := egress.Policy{Proxy: &egress.Proxy{Address: paddr}}
	cnt := fdlimit.NewCounter(fdlimit.Limits{Total: 1})
	tun, addr, br := startTunnel(t, &pol, netip.MustParseAddrPort("11.0.0.1:9000"), &egress.Resolutions{}, func(tun *Tunnel) {
		tun.Admit = func(sb string) (func(), bool) { return cnt.Admit(sb, "team-a") }
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("held open")); err != nil {
		t.Fatal(err)
	}
	waitCount(t, func() int { return cnt.Total() }, 1)
	if _, err := exchange(t, addr, "second"); err == nil {
		t.Error("a connection past the bound was tunnelled")
	}
	waitReason(t, br, guard.ReasonTooMany)
	if n := tun.Open("sb"); n != 1 {
		t.Errorf("%d connections registered, want 1 (the refused one left behind?)", n)
	}
	c.Close()
	waitCount(t, func() int { return cnt.Total() }, 0)
	if got, err := exchange(t, addr, "third"); err != nil || got != "echo:third" {
		t.Errorf("after the first closed: %q, %v", got, err)
	}
}

// waitCount waits until count() is n.
func waitCount(t *testing.T, count func() int, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if count() == n {
			return
		}
	}
	t.Fatalf("counted %d, want %d", count(), n)
}
