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

// policyRules are the fixed rules of chain policy-L: the policy itself is
// in sets (allow-L, dns-L, deny-L, and L in set open unless deny-all), so
// applying one is element changes only (fast: no chain is rewritten).
func (m *Manager) policyRules(ifname string) [][]expr.Any {
	allow, deny, resolved := m.sandboxSets(ifname)
	open := m.openSet()
	drop, acc := verdict(expr.VerdictDrop), verdict(expr.VerdictAccept)
	return [][]expr.Any{m.proxiedDrop(), cat(daddrIn(allow), acc), cat(daddrIn(resolved), acc), cat(daddrIn(deny), drop),
		cat(iifIn(open), acc)}
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
	pol := c.AddChain(&nftables.Chain{Name: policyChainName(ifname), Table: t})
	c.FlushChain(pol)
	for _, r := range m.policyRules(ifname) {
		c.AddRule(&nftables.Rule{Table: t, Chain: pol, Exprs: r})
	}
	ch := c.AddChain(&nftables.Chain{Name: chainName(ifname), Table: t})
	c.FlushChain(ch)
	for _, r := range m.fixedRules(ifname) {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r})
	}
}

// batchPolicy queues the atomic replacement of ifname's policy by p: its
// allow/deny sets are refilled, its resolved addresses forgotten, and its
// membership of sets open, dnsredir and guarded switched. For a fresh link
// (no policy ever applied: its sets are empty and it is in none) only
// additions are queued: removals cost the kernel an RCU grace period.
func (m *Manager) batchPolicy(c *nftables.Conn, ifname string, p egress.Policy, fresh bool) error {
	proxied, err := m.proxied(p)
	if err != nil {
		return err
	}
	allow, deny, resolved := m.sandboxSets(ifname)
	if !fresh {
		for _, s := range []*nftables.Set{allow, deny, resolved} {
			c.FlushSet(s)
		}
	}
	if err := c.SetAddElements(allow, intervalElements(spansOf(p.AllowNets))); err != nil {
		return err
	}
	if err := c.SetAddElements(deny, intervalElements(spansOf(p.DenyNets))); err != nil {
		return err
	}
	_, redir := m.egressSets()
	el := []nftables.SetElement{{Key: ifKey(ifname)}}
	for _, x := range []struct {
		set  *nftables.Set
		el   []nftables.SetElement
		want bool
	}{
		{m.openSet(), el, !p.DenyAll},
		{redir, el, wantsDNS(p) && m.cfg.Egress.DNSPort != 0},
		{m.guardMap(), m.guardJump(ifname), guarded(p) && !proxied && m.cfg.Egress.GuardPort != 0},
		{m.proxiedSet(), el, proxied},
	} {
		if err := switchElement(c, x.set, x.el, x.want, fresh); err != nil {
			return err
		}
	}
	return nil
}

// switchElement queues el in or out of set (add, then delete if unwanted,
// so the batch holds whatever exists); nothing for an unwanted element of
// a fresh link.
func switchElement(c *nftables.Conn, set *nftables.Set, el []nftables.SetElement, want, fresh bool) error {
	if !want && fresh {
		return nil
	}
	if err := c.SetAddElements(set, el); err != nil {
		return err
	}
	if !want {
		return c.SetDeleteElements(set, el)
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
	for _, s := range []*nftables.Set{redir, m.openSet(), m.proxiedSet()} {
		_ = c.SetAddElements(s, el)
		_ = c.SetDeleteElements(s, el)
	}
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
//
// Loopback is exempt: the listeners refuse sources that are not sandboxes
// anyway, and the table outlives the daemon — a stale rule for a port the
// kernel later hands to another local program must not cut that program
// off from its local clients.
func (m *Manager) filterPortsOnlyForSandboxes() [][]expr.Any {
	notIn, drop := cat(notPrefix(expr.MetaKeyIIFNAME, m.cfg.IfPrefix), notLoopback()), verdict(expr.VerdictDrop)
	var rules [][]expr.Any
	for _, p := range m.ownPorts() {
		rules = append(rules, cat(notIn, dport(p.proto, p.port), drop))
	}
	return rules
}

// redirectedToOwnPorts are the input rules that let a sandbox's redirected
// connections in: iifname "sbx*" ct status dnat udp/tcp dport P accept, for
// the daemon's own ports only. Another program's DNAT to this host (Docker's
// published ports, a NodePort) is no door for a sandbox: it meets the drop.
func (m *Manager) redirectedToOwnPorts() [][]expr.Any {
	in, acc := ifPrefix(expr.MetaKeyIIFNAME, m.cfg.IfPrefix), verdict(expr.VerdictAccept)
	var rules [][]expr.Any
	for _, p := range m.ownPorts() {
		rules = append(rules, cat(in, dnatted(), dport(p.proto, p.port), acc))
	}
	return rules
}

// hostPort is a port of the daemon's listeners that sandboxes' traffic is
// redirected to.
type hostPort struct {
	proto byte
	port  uint16
}

// ownPorts are the DNS filter's (UDP and TCP), the guard's and the tunnel's
// ports, those that are configured.
func (m *Manager) ownPorts() []hostPort {
	var out []hostPort
	if port := m.cfg.Egress.DNSPort; port != 0 {
		out = append(out, hostPort{unix.IPPROTO_UDP, port}, hostPort{unix.IPPROTO_TCP, port})
	}
	for _, port := range []uint16{m.cfg.Egress.GuardPort, m.cfg.Egress.TunnelPort} {
		if port != 0 {
			out = append(out, hostPort{unix.IPPROTO_TCP, port})
		}
	}
	return out
}
