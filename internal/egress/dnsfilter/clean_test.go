package dnsfilter

import (
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/sbx-dev/sbx/internal/egress"
)

// recorder is an upstream that keeps every message it was sent.
type recorder struct {
	mu   sync.Mutex
	msgs []*dns.Msg
}

func (u *recorder) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	u.mu.Lock()
	u.msgs = append(u.msgs, r.Copy())
	u.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r)
	if len(r.Question) == 1 {
		rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A 93.184.216.34")
		m.Answer = append(m.Answer, rr)
	}
	_ = w.WriteMsg(m)
}

func (u *recorder) sent() []*dns.Msg {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*dns.Msg(nil), u.msgs...)
}

// Only the question of an allowed name leaves the host: a label holding a
// dot or bytes no host name has (which the name's text form escapes, and
// which would put the query under the allowed domain's parent zone), an
// opcode other than QUERY, and whatever else the message carries (records
// in its authority and additional sections, EDNS options: room for data)
// are refused or not forwarded.
func TestDNSFilterForwardsOnlyTheQuestion(t *testing.T) {
	up := &recorder{}
	allow, _ := egress.Parse(nil, []string{"*.example.com", "api.test"}, nil)
	f := &Filter{Upstream: startUDP(t, up),
		Lookup: func(netip.Addr) (string, egress.Policy, bool) { return "sbx1", allow, true }}
	f.init()
	src := netip.MustParseAddr("127.0.0.1")
	query := func(name string) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		return m
	}
	for _, name := range []string{`x\.example.com.`, `a\.b.c.example.com.`, `x\000.example.com.`, `x\ y.example.com.`, `x\@.example.com.`} {
		if rc := f.answer(src, query(name)).Rcode; rc != dns.RcodeRefused {
			t.Errorf("%s: rcode %s, want REFUSED", name, dns.RcodeToString[rc])
		}
	}
	for _, op := range []int{dns.OpcodeNotify, dns.OpcodeUpdate, dns.OpcodeStatus, dns.OpcodeIQuery} {
		m := query("www.example.com.")
		m.Opcode = op
		if rc := f.answer(src, m).Rcode; rc == dns.RcodeSuccess {
			t.Errorf("opcode %s answered", dns.OpcodeToString[op])
		}
	}
	if n := len(up.sent()); n != 0 {
		t.Fatalf("upstream got %d messages, want none", n)
	}
	m := query("www.example.com.")
	txt, _ := dns.NewRR(`exfil.example.com. 60 IN TXT "stolen-data-1"`)
	ns, _ := dns.NewRR(`example.com. 60 IN NS stolen-data-2.example.com.`)
	m.Extra, m.Ns = append(m.Extra, txt), append(m.Ns, ns)
	m.SetEdns0(4096, true)
	opt := m.IsEdns0()
	opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: 65001, Data: []byte("stolen-data-3")},
		&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: []byte{1, 2, 3, 0}})
	if r := f.answer(src, m); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("allowed query: %v", r)
	}
	sent := up.sent()
	if len(sent) != 1 {
		t.Fatalf("upstream got %d messages, want 1", len(sent))
	}
	got := sent[0]
	if strings.Contains(got.String(), "stolen-data") || len(got.Ns) != 0 || len(got.Answer) != 0 ||
		got.Opcode != dns.OpcodeQuery || len(got.Question) != 1 || got.Question[0].Name != "www.example.com." {
		t.Errorf("upstream got more than the question:\n%s", got)
	}
	if o := got.IsEdns0(); o != nil && len(o.Option) != 0 {
		t.Errorf("upstream got EDNS options %v", o.Option)
	}
}
