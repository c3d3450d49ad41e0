package network

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Egress proxies (egress.Policy.Proxy): a link in set "proxied" has its
// outbound TCP redirected to the daemon's tunnel (Egress.TunnelPort,
// internal/egress/socks), which applies the policy and dials through the
// sandbox's SOCKS5 proxy, and everything else it sends is dropped but DNS
// to the filter:
//
//	nat-pre:  iifname @proxied meta l4proto tcp ip daddr != @blocked tcp dport != 25 redirect to :TunnelPort
//	policy-L: iifname @proxied drop                       (UDP, ICMP: not tunnelled)
//
// The nat-pre rule sits after the DNS redirect (udp/tcp 53 still reach the
// filter) and before the guard's jump (a proxied link is never guarded:
// the tunnel checks names itself). Always-blocked destinations and TCP 25
// are not redirected: they meet the forward chain's drops, as for any
// sandbox.
const setProxied = "proxied"

// idProxied is the proxied set's id (see the ids in nft.go).
const idProxied uint32 = 64

// proxiedSet holds the links whose TCP goes through the tunnel.
func (m *Manager) proxiedSet() *nftables.Set {
	return &nftables.Set{Table: m.table(), Name: setProxied, ID: idProxied, KeyType: nftables.TypeIFName}
}

// tunnelRedirect is nat-pre's rule for proxied links (none without a tunnel).
func (m *Manager) tunnelRedirect() [][]expr.Any {
	port := m.cfg.Egress.TunnelPort
	if port == 0 {
		return nil
	}
	blocked, _ := m.egressSets()
	return [][]expr.Any{cat(iifIn(m.proxiedSet()), l4proto(unix.IPPROTO_TCP), daddrNotIn(blocked), dportNot(25), redirectTo(port))}
}

// proxiedDrop is policy-L's first rule: what a proxied link sends to the
// forward chain is not TCP (that was redirected) and is dropped.
func (m *Manager) proxiedDrop() []expr.Any {
	return cat(iifIn(m.proxiedSet()), verdict(expr.VerdictDrop))
}

// proxied reports whether p's TCP goes through the tunnel; a proxy on a
// manager without one is an error, never a direct connection.
func (m *Manager) proxied(p egress.Policy) (bool, error) {
	if p.Proxy == nil {
		return false, nil
	}
	if m.cfg.Egress.TunnelPort == 0 {
		return false, fmt.Errorf("egress proxy: this node has no egress tunnel")
	}
	return true, nil
}

// l4proto is "meta l4proto proto".
func l4proto(proto byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
}

// dportNot is "th dport != port" (after an l4proto match).
func dportNot(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
	}
}

// daddrNotIn is "ip daddr != @set".
func daddrNotIn(s *nftables.Set) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID, Invert: true},
	}
}
