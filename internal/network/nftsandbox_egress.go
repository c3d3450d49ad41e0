package network

import (
	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Names of a sandbox's egress objects (see nft.go).
func policyChainName(ifname string) string { return "policy-" + ifname }
func guardChainName(ifname string) string  { return "guard-" + ifname }

// sandboxSets returns the allow, deny and resolved sets of host link ifname.
func (m *Manager) sandboxSets(ifname string) (allow, deny, resolved *nftables.Set) {
	t := m.table()
	allow = &nftables.Set{Table: t, Name: "allow-" + ifname, ID: idAllow, KeyType: nftables.TypeIPAddr, Interval: true}
	deny = &nftables.Set{Table: t, Name: "deny-" + ifname, ID: idDeny, KeyType: nftables.TypeIPAddr, Interval: true}
	resolved = &nftables.Set{Table: t, Name: "dns-" + ifname, ID: idResolved, KeyType: nftables.TypeIPAddr, HasTimeout: true}
	return allow, deny, resolved
}

// setPrefixes are the name prefixes of per-sandbox sets (for sync).
var setPrefixes = []string{"allow-", "deny-", "dns-"}

// fixedRules are the rules of chain sandbox-L every sandbox gets.
func (m *Manager) fixedRules(ifname string) [][]expr.Any {
	blocked, _ := m.egressSets()
	e := m.cfg.Egress
	drop, acc := verdict(expr.VerdictDrop), verdict(expr.VerdictAccept)
	return [][]expr.Any{
		cat(established(), acc),
		cat(nfproto(expr.CmpOpNeq), drop),
		cat(ifPrefix(expr.MetaKeyOIFNAME, m.cfg.IfPrefix), drop),
		cat(daddrIn(blocked), drop),
		cat(dport(unix.IPPROTO_TCP, 25), drop),
		cat(ctStateNew(), []expr.Any{&expr.Limit{Type: expr.LimitTypePkts, Rate: uint64(e.ConnRate),
			Over: true, Unit: expr.LimitTimeSecond, Burst: e.ConnBurst}}, drop),
		cat(ctStateNew(), []expr.Any{&expr.Connlimit{Count: e.MaxConns, Flags: expr.NFT_CONNLIMIT_F_INV}}, drop),
		jumpTo(policyChainName(ifname)),
	}
}

// policyRules are the rules of chain policy-L for p.
func (m *Manager) policyRules(ifname string, p egress.Policy) [][]expr.Any {
	allow, deny, resolved := m.sandboxSets(ifname)
	drop, acc := verdict(expr.VerdictDrop), verdict(expr.VerdictAccept)
	rules := [][]expr.Any{cat(daddrIn(allow), acc), cat(daddrIn(resolved), acc), cat(daddrIn(deny), drop)}
	if !p.DenyAll {
		rules = append(rules, acc)
	}
	return rules
}

// wantsDNS reports whether p lets the sandbox use the DNS filter at all:
// not with deny-all and no allowed name ("nothing at all, DNS included").
func wantsDNS(p egress.Policy) bool { return !p.DenyAll || len(p.AllowDoms) > 0 }

// batchSandbox queues the creation of ifname's egress objects: its sets
// and chains (kept if they exist: a restart keeps the policy) and the
// fixed rules (rewritten).
func (m *Manager) batchSandbox(c *nftables.Conn, ifname string) {
	allow, deny, resolved := m.sandboxSets(ifname)
	for _, s := range []*nftables.Set{allow, deny, resolved} {
		_ = c.AddSet(s, nil)
	}
	t := m.table()
	g := c.AddChain(&nftables.Chain{Name: guardChainName(ifname), Table: t})
	c.FlushChain(g)
	for _, r := range m.guardRules(resolved) {
		c.AddRule(&nftables.Rule{Table: t, Chain: g, Exprs: r})
	}
	c.AddChain(&nftables.Chain{Name: policyChainName(ifname), Table: t})
	ch := c.AddChain(&nftables.Chain{Name: chainName(ifname), Table: t})
	c.FlushChain(ch)
	for _, r := range m.fixedRules(ifname) {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r})
	}
}

// batchPolicy queues the atomic replacement of ifname's policy by p: its
// sets and policy chain are rewritten, its resolved addresses forgotten,
// and its DNS redirect switched.
func (m *Manager) batchPolicy(c *nftables.Conn, ifname string, p egress.Policy) error {
	allow, deny, resolved := m.sandboxSets(ifname)
	for _, s := range []*nftables.Set{allow, deny, resolved} {
		c.FlushSet(s)
	}
	if err := c.SetAddElements(allow, intervalElements(spansOf(p.AllowNets))); err != nil {
		return err
	}
	if err := c.SetAddElements(deny, intervalElements(spansOf(p.DenyNets))); err != nil {
		return err
	}
	t := m.table()
	ch := &nftables.Chain{Name: policyChainName(ifname), Table: t}
	c.FlushChain(ch)
	for _, r := range m.policyRules(ifname, p) {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r})
	}
	_, redir := m.egressSets()
	el := []nftables.SetElement{{Key: ifKey(ifname)}}
	if err := c.SetAddElements(redir, el); err != nil {
		return err
	}
	if !wantsDNS(p) || m.cfg.Egress.DNSPort == 0 {
		if err := c.SetDeleteElements(redir, el); err != nil {
			return err
		}
	}
	jump := m.guardJump(ifname)
	if err := c.SetAddElements(m.guardMap(), jump); err != nil {
		return err
	}
	if !guarded(p) || m.cfg.Egress.GuardPort == 0 {
		return c.SetDeleteElements(m.guardMap(), jump)
	}
	return nil
}

// guarded reports whether p's connections to resolved names go through the
// SNI/Host guard: it has domain rules.
func guarded(p egress.Policy) bool { return p.DenyAll && len(p.AllowDoms) > 0 }

// guardJump is ifname's element of map guarded.
func (m *Manager) guardJump(ifname string) []nftables.SetElement {
	return []nftables.SetElement{{Key: ifKey(ifname),
		VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: guardChainName(ifname)}}}
}

// guardRules are the rules of chain guard-L (none without a guard).
func (m *Manager) guardRules(resolved *nftables.Set) [][]expr.Any {
	port := m.cfg.Egress.GuardPort
	if port == 0 {
		return nil
	}
	return [][]expr.Any{
		cat(daddrIn(resolved), dport(unix.IPPROTO_TCP, 80), redirectTo(port)),
		cat(daddrIn(resolved), dport(unix.IPPROTO_TCP, 443), redirectTo(port)),
	}
}

// batchDelSandbox queues the removal of ifname's egress objects (after its
// chain lost its jump), each first added so the batch holds whatever exists.
func (m *Manager) batchDelSandbox(c *nftables.Conn, ifname string) {
	t := m.table()
	g := c.AddChain(&nftables.Chain{Name: guardChainName(ifname), Table: t}) // before a jump to it
	jump := m.guardJump(ifname)
	_ = c.SetAddElements(m.guardMap(), jump)
	_ = c.SetDeleteElements(m.guardMap(), jump)
	c.FlushChain(g)
	c.DelChain(g)
	pol := c.AddChain(&nftables.Chain{Name: policyChainName(ifname), Table: t})
	c.FlushChain(pol)
	c.DelChain(pol)
	allow, deny, resolved := m.sandboxSets(ifname)
	for _, s := range []*nftables.Set{allow, deny, resolved} {
		_ = c.AddSet(s, nil)
		c.DelSet(s)
	}
	_, redir := m.egressSets()
	el := []nftables.SetElement{{Key: ifKey(ifname)}}
	_ = c.SetAddElements(redir, el)
	_ = c.SetDeleteElements(redir, el)
}

// dnsRedirect are the rules of nat-pre.
func (m *Manager) dnsRedirect(redir *nftables.Set) [][]expr.Any {
	port := m.cfg.Egress.DNSPort
	if port == 0 {
		return nil
	}
	return [][]expr.Any{
		cat(iifIn(redir), dport(unix.IPPROTO_UDP, 53), redirectTo(port)),
		cat(iifIn(redir), dport(unix.IPPROTO_TCP, 53), redirectTo(port)),
	}
}

// filterPortsOnlyForSandboxes are input rules that keep the DNS filter's
// and the guard's ports (bound on the host's wildcard address) closed to
// anything but sandbox links: iifname != "sbx*" udp/tcp dport P drop.
func (m *Manager) filterPortsOnlyForSandboxes() [][]expr.Any {
	notIn, drop := notPrefix(expr.MetaKeyIIFNAME, m.cfg.IfPrefix), verdict(expr.VerdictDrop)
	var rules [][]expr.Any
	if port := m.cfg.Egress.DNSPort; port != 0 {
		rules = append(rules, cat(notIn, dport(unix.IPPROTO_UDP, port), drop), cat(notIn, dport(unix.IPPROTO_TCP, port), drop))
	}
	if port := m.cfg.Egress.GuardPort; port != 0 {
		rules = append(rules, cat(notIn, dport(unix.IPPROTO_TCP, port), drop))
	}
	return rules
}
