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
//	input:
//	  iifname "sbx*" ct state established,related accept  replies to the host
//	  iifname "sbx*" drop                                  no host service
//	forward:
//	  iifname vmap @sandboxes                              per-sandbox chain
//	  iifname "sbx*" drop                                  fail closed
//	  oifname "sbx*" ct state established,related accept
//	  oifname "sbx*" drop
//
// Per sandbox (host link L, sandbox address A): the element L . A of set
// addrs (the only source L may use), and a regular chain "sandbox-L" jumped
// to from forward through the element L : jump sandbox-L of verdict map
// sandboxes. That chain is empty today: whatever it does not accept falls
// back to the base drop. The egress policy adds its per-sandbox allow/deny
// rules and sets there (and NAT, DNS redirect, conntrack caps in chains of
// its own keyed the same way) without touching the base chains.
const (
	setAddrs     = "addrs"
	mapSandboxes = "sandboxes"
)

// ensureTable creates the table, its sets and base chains if missing and
// rewrites the base rules, in one atomic batch. Per-sandbox objects of live
// sandboxes are kept (New may run while sandboxes run).
func (m *Manager) ensureTable() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := c.AddTable(m.table())
	addrs, vmap := m.sets()
	if err := c.AddSet(addrs, nil); err != nil {
		return fmt.Errorf("nftables set: %w", err)
	}
	if err := c.AddSet(vmap, nil); err != nil {
		return fmt.Errorf("nftables map: %w", err)
	}
	for _, bc := range m.baseChains(t, addrs, vmap) {
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
	addrs = &nftables.Set{Table: t, Name: setAddrs, Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIFName, nftables.TypeIPAddr)}
	vmap = &nftables.Set{Table: t, Name: mapSandboxes, IsMap: true, KeyByteOrder: binaryutil.NativeEndian,
		KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict}
	return addrs, vmap
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
