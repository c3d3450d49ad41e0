package network

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/egresstest"
	"github.com/sbx-dev/sbx/internal/egress/guard"
)

// tunnelStub accepts redirected connections, records their original
// destinations and answers "hi".
type tunnelStub struct {
	mu   sync.Mutex
	dsts []string
}

func (s *tunnelStub) serve(t *testing.T) uint16 {
	addr := egresstest.Listen(t, "tcp4", "0.0.0.0:0", func(ctx context.Context, c net.Conn) {
		dst, _ := guard.OriginalDst(c)
		s.mu.Lock()
		s.dsts = append(s.dsts, dst.String())
		s.mu.Unlock()
		greet(ctx, c)
	})
	return netip.MustParseAddrPort(addr).Port()
}

func (s *tunnelStub) saw(dst string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.dsts {
		if d == dst {
			return true
		}
	}
	return false
}

func (s *tunnelStub) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dsts)
}

// udpSink counts datagrams received on in.a:8053.
func udpSink(t *testing.T, in *internet) func() int {
	var pc net.PacketConn
	if err := inNS(in.ns, func() (err error) {
		pc, err = net.ListenPacket("udp4", netip.AddrPortFrom(in.a, 8053).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		b := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(b); err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
		}
	}()
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestTunnelRedirect: a proxied sandbox's TCP (any port, to any
// destination not always blocked) reaches the tunnel with its original
// destination, never the internet; its UDP is dropped; blocked ranges and
// the host stay closed; dropping the proxy sends it out directly again;
// teardown leaves nothing.
func TestTunnelRedirect(t *testing.T) {
	stub := &tunnelStub{}
	cfg := testConfig(48)
	cfg.Egress = Egress{TunnelPort: stub.serve(t)}
	m := testManager(t, cfg)
	in := newInternet(t, 48)
	udp := udpSink(t, in)
	a := setup(t, m, "a48aaaaaaaaaaaaaaaaa")
	hostPort := hostServer(t)
	reach := func(to string) bool { return retry(3, func() error { return dialFrom(t, a, to) }) == nil }
	sendUDP := func() {
		_ = inNet(t, a, func() error {
			c, err := net.Dial("udp4", netip.AddrPortFrom(in.a, 8053).String())
			if err == nil {
				c.Write([]byte("x"))
				c.Close()
			}
			return err
		})
		time.Sleep(100 * time.Millisecond)
	}
	proxied := mustPolicy(t, nil, nil, nil)
	proxied.Proxy = &egress.Proxy{Address: "192.0.2.1:1080"}
	if err := m.SetPolicy(context.Background(), a.ID, proxied); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{in.addr(in.a), netip.AddrPortFrom(in.b, 22).String()} {
		// a link just made may take a moment to pass its first packets
		if err := eventually(func() error { return dialFrom(t, a, dst) }); err != nil || !stub.saw(dst) {
			t.Errorf("proxied: %s did not reach the tunnel: %v", dst, err)
		}
	}
	for _, dst := range []string{"192.168.1.1:80", netip.AddrPortFrom(a.HostIP, hostPort).String(), netip.AddrPortFrom(in.a, 25).String()} {
		if reach(dst) || stub.saw(dst) {
			t.Errorf("proxied: blocked %s reached something", dst)
		}
	}
	if sendUDP(); udp() != 0 {
		t.Errorf("proxied: UDP left the sandbox")
	}
	if err := m.SetPolicy(context.Background(), a.ID, mustPolicy(t, nil, nil, nil)); err != nil {
		t.Fatal(err)
	}
	n := stub.count()
	if !probe(true, func() error { return dialFrom(t, a, in.addr(in.b)) }) || stub.count() != n {
		t.Errorf("direct again: %s not reached directly", in.addr(in.b))
	}
	if sendUDP(); udp() == 0 {
		t.Errorf("direct again: UDP did not leave")
	}
	if err := m.Teardown(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if out := run(t, "nft", "list", "table", "inet", m.cfg.Table); strings.Contains(out, a.HostIf) {
		t.Errorf("nft objects of %s left:\n%s", a.HostIf, out)
	}
}

// TestProxyWithoutTunnel: a proxy on a manager without a tunnel is
// refused; the previous policy stays.
func TestProxyWithoutTunnel(t *testing.T) {
	m := testManager(t, testConfig(49))
	a := setup(t, m, "a49aaaaaaaaaaaaaaaaa")
	p := egress.Policy{Proxy: &egress.Proxy{Address: "192.0.2.1:1080"}}
	if err := m.SetPolicy(context.Background(), a.ID, p); err == nil || !strings.Contains(err.Error(), "no egress tunnel") {
		t.Fatalf("SetPolicy = %v, want refused", err)
	}
	if _, _, ok := m.PolicyOf(a.SandboxIP); ok {
		t.Error("a refused policy was recorded")
	}
}
