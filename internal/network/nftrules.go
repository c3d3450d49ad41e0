package network

import (
	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

type baseChain struct {
	chain *nftables.Chain
	rules [][]expr.Any
}

// baseChains returns the base chains and their rules (see nft.go).
func (m *Manager) baseChains(t *nftables.Table, addrs, vmap, redir, guard *nftables.Set) []baseChain {
	accept := nftables.ChainPolicyAccept
	hook := func(name string, h *nftables.ChainHook, p *nftables.ChainPriority) *nftables.Chain {
		return &nftables.Chain{Name: name, Table: t, Type: nftables.ChainTypeFilter, Hooknum: h, Priority: p, Policy: &accept}
	}
	nat := func(name string, h *nftables.ChainHook, p *nftables.ChainPriority) *nftables.Chain {
		return &nftables.Chain{Name: name, Table: t, Type: nftables.ChainTypeNAT, Hooknum: h, Priority: p, Policy: &accept}
	}
	in, out := ifPrefix(expr.MetaKeyIIFNAME, m.cfg.IfPrefix), ifPrefix(expr.MetaKeyOIFNAME, m.cfg.IfPrefix)
	drop, acc := verdict(expr.VerdictDrop), verdict(expr.VerdictAccept)
	return []baseChain{
		{hook("prerouting", nftables.ChainHookPrerouting, nftables.ChainPriorityRaw), [][]expr.Any{
			cat(in, nfproto(expr.CmpOpNeq), drop),
			cat(in, nfproto(expr.CmpOpEq), notFromOwnAddr(addrs), drop),
		}},
		{nat("nat-pre", nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest), append(append(m.dnsRedirect(redir), m.tunnelRedirect()...), jumpByIif(guard))},
		{hook("input", nftables.ChainHookInput, nftables.ChainPriorityFilter), catRules(
			[][]expr.Any{cat(in, established(), acc)},
			m.redirectedToOwnPorts(),
			[][]expr.Any{cat(in, drop)},
			m.filterPortsOnlyForSandboxes())},
		{hook("forward", nftables.ChainHookForward, nftables.ChainPriorityFilter), [][]expr.Any{
			jumpByIif(vmap),
			cat(in, drop),
			cat(out, established(), acc),
			cat(out, drop),
		}},
		{nat("nat-post", nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource), [][]expr.Any{
			cat(fromSubnet(m.cfg.Subnet), notPrefix(expr.MetaKeyOIFNAME, m.cfg.IfPrefix), []expr.Any{&expr.Masq{}}),
		}},
		{markChain(t), [][]expr.Any{verdict(expr.VerdictReturn)}},
	}
}

// chainMark names a regular chain nothing jumps to, holding one rule that
// does nothing: its only use is that `nft flush table` (which keeps the
// table, its chains and sets, and removes every rule) removes it too, so
// Heal tells a flushed table from an intact one with one request.
const chainMark = "heal-mark"

// markChain is the chain chainMark of t.
func markChain(t *nftables.Table) *nftables.Chain {
	return &nftables.Chain{Name: chainMark, Table: t}
}

// catRules concatenates lists of rules.
func catRules(lists ...[][]expr.Any) [][]expr.Any {
	var out [][]expr.Any
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func cat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ifPrefix matches an interface name by prefix: cmp compares only len(data).
func ifPrefix(key expr.MetaKey, prefix string) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte(prefix)},
	}
}

// nfproto compares the packet's family with IPv4 ("meta nfproto ipv4").
func nfproto(op expr.CmpOp) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: op, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
	}
}

// notFromOwnAddr matches iifname . ip saddr not in addrs. The name fills the
// 32-bit registers 00-03 and the address 04, the layout of the set's key.
func notFromOwnAddr(addrs *nftables.Set) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: unix.NFT_REG32_00},
		&expr.Payload{DestRegister: unix.NFT_REG32_04, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Lookup{SourceRegister: unix.NFT_REG32_00, SetName: addrs.Name, SetID: addrs.ID, Invert: true},
	}
}

// jumpByIif is "iifname vmap @sandboxes".
func jumpByIif(vmap *nftables.Set) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Lookup{SourceRegister: 1, SetName: vmap.Name, SetID: vmap.ID, IsDestRegSet: true, DestRegister: 0},
	}
}

func established() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}

func verdict(k expr.VerdictKind) []expr.Any { return []expr.Any{&expr.Verdict{Kind: k}} }
