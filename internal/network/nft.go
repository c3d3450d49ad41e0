package network

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
)

// The nftables table (family inet, named Config.Table) lives in the kernel
// and holds while the daemon is down. Base chains match every sandbox link
// by name prefix (nft's "sbx*"), so a link is fenced from the moment it
// exists, with or without its own objects:
//
//	prerouting (raw, before conntrack):
//	  iifname "sbx*" meta nfproto != ipv4 drop
//	  iifname "sbx*" iifname . ip saddr != @addrs drop    anti-spoofing
//	nat-pre (nat, dstnat):
//	  iifname @dnsredir udp/tcp dport 53 redirect to :DNSPort
//	  iifname @proxied tcp, ip daddr != @blocked: redirect to :TunnelPort  (nftproxy.go)
//	  iifname vmap @guarded                                jump guard-L
//	input:
//	  iifname "sbx*" ct state established,related accept  replies to the host
//	  iifname "sbx*" ct status dnat udp/tcp dport DNSPort/GuardPort/TunnelPort accept
//	                                                       redirected to the daemon (only)
//	  iifname "sbx*" drop                                  no other host service
//	  iifname != "sbx*" iiftype != loopback udp/tcp dport DNSPort/GuardPort drop
//	forward:
//	  iifname vmap @sandboxes                              per-sandbox chain
//	  iifname "sbx*" drop                                  fail closed
//	  oifname "sbx*" ct state established,related accept
//	  oifname "sbx*" drop
//	nat-post (nat, srcnat):
//	  ip saddr SUBNET oifname != "sbx*" masquerade         out through any uplink
//
// Set blocked holds egress.AlwaysBlocked minus Egress.Open, plus SUBNET.
//
// Per sandbox (host link L, sandbox address A): the element L . A of set
// addrs (the only source L may use), and the chain "sandbox-L" jumped to
// from forward through the element L : jump sandbox-L of verdict map
// sandboxes. It holds the fixed rules every sandbox gets:
//
//	ct state established,related accept
//	oifname "sbx*" drop; ip daddr @blocked drop; tcp dport 25 drop
//	ct state new limit rate over ConnRate/s burst ConnBurst drop
//	ct state new ct count over MaxConns drop
//	jump policy-L
//
// and "policy-L" holds fixed rules over the sandbox's egress policy, which
// lives in sets SetPolicy changes atomically (all empty, so deny-all, until
// then):
//
//	ip daddr @allow-L accept; ip daddr @dns-L accept; ip daddr @deny-L drop
//	iifname @open accept                                 L is in open unless deny-all
//
// allow-L and deny-L are interval sets of the policy's CIDRs; dns-L holds
// the addresses the DNS filter resolved for allowed names, each with a
// timeout (its TTL, bounded). L is in set dnsredir iff its policy lets it
// use DNS. Whatever the chains do not accept falls back to the base drop.
// With a guard (GuardPort), chain "guard-L" holds
//
//	ip daddr @dns-L tcp dport 80/443 redirect to :GuardPort
//
// and L : jump guard-L is in map guarded iff L's policy has domain rules:
// its connections to resolved addresses go through the SNI/Host check.
const (
	setAddrs     = "addrs"
	mapSandboxes = "sandboxes"
	setBlocked   = "blocked"
	setDNSRedir  = "dnsredir"
	mapGuard     = "guarded"
	setOpen      = "open"
)

// Set ids are fixed: google/nftables allocates an id for a set without one
// from a package global without synchronisation (a data race between
// concurrent batches). Rules find sets by name; ids only need to differ
// within a batch.
const (
	idAddrs uint32 = iota + 1
	idSandboxes
	idBlocked
	idDNSRedir
	idAllow
	idDeny
	idResolved
	idGuard
	idOpen
)

// ensureTable creates the table, its sets and base chains if missing and
// rewrites the base rules, in one atomic batch. Per-sandbox objects of live
// sandboxes are kept (New may run while sandboxes run).
func (m *Manager) ensureTable() error { return m.installTable(false) }

// installTable is ensureTable; with replace, the table the kernel holds is
// deleted in the same batch (atomically: the links are never without the
// base chains' fence), and every per-sandbox object with it.
func (m *Manager) installTable(replace bool) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	if replace {
		c.DelTable(m.table())
	}
	t := c.AddTable(m.table())
	addrs, vmap := m.sets()
	blocked, redir := m.egressSets()
	guard := m.guardMap()
	for _, s := range []*nftables.Set{addrs, vmap, blocked, redir, guard, m.openSet(), m.proxiedSet()} {
		if err := c.AddSet(s, nil); err != nil {
			return fmt.Errorf("nftables set %s: %w", s.Name, err)
		}
	}
	c.FlushSet(blocked)
	if err := c.SetAddElements(blocked, intervalElements(m.blockedSpans())); err != nil {
		return fmt.Errorf("nftables set %s: %w", setBlocked, err)
	}
	for _, bc := range m.baseChains(t, addrs, vmap, redir, guard) {
		ch := c.AddChain(bc.chain)
		c.FlushChain(ch)
		for _, r := range bc.rules {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables install table %s: %w", m.cfg.Table, err)
	}
	return nil
}

func (m *Manager) table() *nftables.Table {
	return &nftables.Table{Family: nftables.TableFamilyINet, Name: m.cfg.Table}
}

// sets returns the anti-spoofing set and the per-sandbox verdict map.
func (m *Manager) sets() (addrs, vmap *nftables.Set) {
	t := m.table()
	addrs = &nftables.Set{Table: t, Name: setAddrs, ID: idAddrs, Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIFName, nftables.TypeIPAddr)}
	vmap = &nftables.Set{Table: t, Name: mapSandboxes, ID: idSandboxes, IsMap: true, KeyByteOrder: binaryutil.NativeEndian,
		KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict}
	return addrs, vmap
}

// egressSets returns the always-blocked interval set and the set of links
// whose DNS is redirected to the filter.
func (m *Manager) egressSets() (blocked, redir *nftables.Set) {
	t := m.table()
	blocked = &nftables.Set{Table: t, Name: setBlocked, ID: idBlocked, KeyType: nftables.TypeIPAddr, Interval: true}
	redir = &nftables.Set{Table: t, Name: setDNSRedir, ID: idDNSRedir, KeyType: nftables.TypeIFName}
	return blocked, redir
}

// openSet holds the links whose policy is not deny-all.
func (m *Manager) openSet() *nftables.Set {
	return &nftables.Set{Table: m.table(), Name: setOpen, ID: idOpen, KeyType: nftables.TypeIFName}
}

// guardMap is the verdict map from a link to its guard-L chain.
func (m *Manager) guardMap() *nftables.Set {
	return &nftables.Set{Table: m.table(), Name: mapGuard, ID: idGuard, IsMap: true, KeyByteOrder: binaryutil.NativeEndian,
		KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict}
}

// RemoveTable deletes the table with every rule, set and per-sandbox chain
// in it (tests, uninstall). Sandbox links keep existing, unfenced by it.
func (m *Manager) RemoveTable() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	c.DelTable(m.table())
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables delete table %s: %w", m.cfg.Table, err)
	}
	return nil
}
