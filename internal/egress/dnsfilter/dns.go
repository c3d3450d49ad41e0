package dnsfilter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Resolved is called with the addresses an allowed name resolved to, so the
// caller can open them in the kernel (an nftables set element with timeout).
type Resolved func(sandbox string, name string, addrs []netip.Addr, ttl time.Duration)

// QueryLog receives every query (allowed or not) with the sandbox id.
type QueryLog func(sandbox, name, qtype, verdict string)

// Filter is the resolver sandboxes are given. It answers only names the
// sandbox's policy allows, by asking the upstream resolver; everything else
// gets REFUSED without any packet leaving the host, so a deny-all sandbox
// cannot exfiltrate data through DNS.
type Filter struct {
	Upstream string // host:port of the upstream resolver
	Lookup   egress.Lookup
	Resolved Resolved
	Log      QueryLog
	MinTTL   time.Duration // floor for the TTL handed to Resolved (default 30 s)
	MaxTTL   time.Duration // answers' TTLs are lowered to this (0: kept)
	// Per sandbox: Rate queries a second, burst Burst (0: DefaultRate and
	// DefaultBurst), past it REFUSED; MaxInFlight upstream forwards at once
	// (0: DefaultMaxInFlight), and MaxForwards for all sandboxes together
	// (0: DefaultMaxForwards), past them SERVFAIL at once (bound.go).
	Rate, Burst              float64
	MaxInFlight, MaxForwards int
	b                        *bounds

	mu      sync.Mutex // guards servers
	servers []*dns.Server
	client  dns.Client
}

// ListenAndServe serves DNS over UDP and TCP on addr until ctx ends.
func (f *Filter) ListenAndServe(ctx context.Context, addr string) error {
	f.init()
	errc := make(chan error, 2)
	for _, nw := range []string{"udp", "tcp"} {
		s := &dns.Server{Addr: addr, Net: nw, Handler: f}
		f.mu.Lock()
		f.servers = append(f.servers, s)
		f.mu.Unlock()
		go func() { errc <- s.ListenAndServe() }()
	}
	select {
	case err := <-errc:
		f.shutdown()
		return fmt.Errorf("dns filter on %s: %w", addr, err)
	case <-ctx.Done():
		f.shutdown()
		return nil
	}
}

func (f *Filter) init() {
	if f.MinTTL == 0 {
		f.MinTTL = 30 * time.Second
	}
	f.client = dns.Client{Timeout: 3 * time.Second}
	f.initBounds()
}

func (f *Filter) shutdown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.servers {
		_ = s.Shutdown()
	}
}

// ServeDNS implements dns.Handler.
func (f *Filter) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	resp := f.answer(sourceAddr(w.RemoteAddr()), req)
	_ = w.WriteMsg(resp)
}

func sourceAddr(a net.Addr) netip.Addr {
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// answer decides and builds the response for one query.
func (f *Filter) answer(src netip.Addr, req *dns.Msg) *dns.Msg {
	refuse := new(dns.Msg)
	refuse.SetRcode(req, dns.RcodeRefused)
	sb, pol, ok := f.Lookup(src)
	if !ok || len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery || !f.admit(sb) {
		return refuse
	}
	q := req.Question[0]
	qtype := dns.TypeToString[q.Qtype]
	if !hostName(q.Name) || q.Qclass != dns.ClassINET || !pol.AllowsName(q.Name) || !allowedType(q.Qtype) {
		f.log(sb, q.Name, qtype, "refused")
		return refuse
	}
	resp, err := f.forwardFor(sb, req)
	if err != nil {
		f.log(sb, q.Name, qtype, "upstream error: "+err.Error())
		fail := new(dns.Msg)
		fail.SetRcode(req, dns.RcodeServerFailure)
		return fail
	}
	f.log(sb, q.Name, qtype, "allowed")
	f.clampTTL(resp)
	f.publish(sb, q.Name, resp)
	return resp
}

// hostName reports whether name (in text form) has host-name labels only:
// letters, digits, '-' and '_'. A label holding a dot or other bytes shows
// escaped ("x\.example.com." is the label "x.example" under "com."), so
// a name the policy's text match allows could be queried elsewhere.
func hostName(name string) bool {
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// allowedType limits queries to what programs need; TXT, NULL, ANY and the
// like are the usual tunnels.
func allowedType(t uint16) bool {
	switch t {
	case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeHTTPS, dns.TypeSRV, dns.TypeMX:
		return true
	}
	return false
}

// forwardFor forwards req for sb within sb's and the filter's forwards in
// flight.
func (f *Filter) forwardFor(sb string, req *dns.Msg) (*dns.Msg, error) {
	if !f.acquire(sb) {
		return nil, errors.New("too many queries in flight")
	}
	defer f.release(sb)
	return f.forward(req)
}

// forward asks the upstream req's question, and nothing else of req: its
// other sections and EDNS options could carry data out (an EDNS0 OPT with
// its buffer size and DO bit, but no option, is kept).
func (f *Filter) forward(req *dns.Msg) (*dns.Msg, error) {
	out := new(dns.Msg)
	out.SetQuestion(req.Question[0].Name, req.Question[0].Qtype)
	out.RecursionDesired, out.CheckingDisabled = req.RecursionDesired, req.CheckingDisabled
	if opt := req.IsEdns0(); opt != nil {
		out.SetEdns0(opt.UDPSize(), opt.Do())
	}
	resp, _, err := f.client.Exchange(out, f.Upstream)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("no response")
	}
	resp.Id = req.Id
	return resp, nil
}

// publish hands the A/AAAA answers to Resolved with the smallest TTL.
func (f *Filter) publish(sb, name string, resp *dns.Msg) {
	if f.Resolved == nil {
		return
	}
	var addrs []netip.Addr
	ttl := time.Duration(0)
	for _, rr := range resp.Answer {
		var ip net.IP
		switch v := rr.(type) {
		case *dns.A:
			ip = v.A
		case *dns.AAAA:
			ip = v.AAAA
		default:
			continue
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			addrs = append(addrs, a.Unmap())
		}
		if d := time.Duration(rr.Header().Ttl) * time.Second; ttl == 0 || d < ttl {
			ttl = d
		}
	}
	if len(addrs) > 0 {
		f.Resolved(sb, name, addrs, max(ttl, f.MinTTL))
	}
}

func (f *Filter) log(sb, name, qtype, verdict string) {
	if f.Log != nil {
		f.Log(sb, name, qtype, verdict)
	} else {
		slog.Debug("dns", "sandbox", sb, "name", name, "type", qtype, "verdict", verdict)
	}
}
