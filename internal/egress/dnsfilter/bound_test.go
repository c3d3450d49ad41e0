package dnsfilter

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/sbx-dev/sbx/internal/egress"
)

// slowUpstream answers ok.example.com and never anything else (an upstream
// that does not answer: each forward waits for the client's timeout).
type slowUpstream struct{ got atomic.Int64 }

func (u *slowUpstream) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	u.got.Add(1)
	if r.Question[0].Name != "ok.example.com." {
		return
	}
	m := new(dns.Msg)
	m.SetReply(r)
	rr, _ := dns.NewRR("ok.example.com. 60 IN A 93.184.216.34")
	m.Answer = append(m.Answer, rr)
	_ = w.WriteMsg(m)
}

// TestFloodBounded: a sandbox sending 3000 queries at once to an upstream
// that does not answer gets at most its burst through the rate, at most
// MaxInFlight of them forwarded at once, and its refusals logged once a
// second, not one by one; a neighbour's query is answered meanwhile.
// Before, every query was forwarded (a socket and a goroutine each until
// the upstream timeout) and logged (an audit record each).
func TestFloodBounded(t *testing.T) {
	up := &slowUpstream{}
	allow, _ := egress.Parse(nil, []string{"*.example.com"}, nil)
	var logged, limited atomic.Int64
	f := &Filter{
		Upstream: startUDP(t, up), Rate: 50, Burst: 100, MaxInFlight: 8,
		Lookup: func(src netip.Addr) (string, egress.Policy, bool) { return "sb-" + src.String(), allow, true },
		Log: func(sb, name, _, verdict string) {
			if sb == "sb-127.0.0.1" {
				logged.Add(1)
				if name == "" {
					limited.Add(1)
				}
			}
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pc, ln, port, err := Listen("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	go f.Serve(ctx, pc, ln)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	t0 := time.Now()
	flood(t, addr, 3000)
	time.Sleep(300 * time.Millisecond)
	// What the rate lets through grows with the time the flood took (a
	// loaded machine sends it slowly): the burst, Rate a second after it,
	// and a rate-limit report a second.
	elapsed := time.Since(t0).Seconds()
	most := int64(100 + 51*elapsed + 10)
	if n := up.got.Load(); n > 8 {
		t.Fatalf("%d queries forwarded at once, want at most MaxInFlight (8)", n)
	}
	if n := logged.Load(); n > most || limited.Load() < 1 {
		t.Fatalf("%d queries logged (%d rate-limit reports) of 3000 in %.1f s, want at most %d (the burst, the rate, a report a second)", n, limited.Load(), elapsed, most)
	}
	c := &dns.Client{Timeout: 2 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}}}
	m := new(dns.Msg)
	m.SetQuestion("ok.example.com.", dns.TypeA)
	r, _, err := c.Exchange(m, addr)
	if err != nil || r.Rcode != dns.RcodeSuccess {
		t.Fatalf("neighbour's query during the flood: %v %v", r, err)
	}
}

// flood sends n A queries from one socket without waiting for answers.
func flood(t *testing.T, addr string, n int) {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // drain answers so that the socket's buffer never blocks them
		defer wg.Done()
		buf := make([]byte, 512)
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}()
	for i := range n {
		m := new(dns.Msg)
		m.SetQuestion("x"+strconv.Itoa(i)+".example.com.", dns.TypeA)
		b, _ := m.Pack()
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
		if i%200 == 0 {
			time.Sleep(time.Millisecond) // loopback drops past its buffer
		}
	}
	wg.Wait()
}
