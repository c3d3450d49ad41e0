package network

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
)

// ensureTable (re)installs the sbx table atomically: one netlink batch that
// deletes the old table (if any) and adds the new one, so there is no moment
// without rules. The rules match every sandbox link by name prefix, so they
// need no per-sandbox state and keep holding while the daemon is down:
//
//	input:   from sandbox links, only replies to the host's own connections
//	         (ct established,related); everything else is dropped, so a
//	         sandbox reaches no host service, including its link's host side.
//	forward: nothing is forwarded from or to a sandbox link: no egress and no
//	         path between sandboxes (the egress policy will open this chain
//	         per sandbox).
func (m *Manager) ensureTable() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return fmt.Errorf("nftables list: %w", err)
	}
	for _, t := range tables {
		if t.Name == m.cfg.Table {
			c.DelTable(t)
		}
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: m.cfg.Table})
	accept := nftables.ChainPolicyAccept
	input := c.AddChain(&nftables.Chain{Name: "input", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	forward := c.AddChain(&nftables.Chain{Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	pre := []byte(m.cfg.IfPrefix)
	c.AddRule(&nftables.Rule{Table: t, Chain: input, Exprs: concat(ifMatch(expr.MetaKeyIIFNAME, pre), established(), verdict(expr.VerdictAccept))})
	c.AddRule(&nftables.Rule{Table: t, Chain: input, Exprs: concat(ifMatch(expr.MetaKeyIIFNAME, pre), verdict(expr.VerdictDrop))})
	c.AddRule(&nftables.Rule{Table: t, Chain: forward, Exprs: concat(ifMatch(expr.MetaKeyIIFNAME, pre), verdict(expr.VerdictDrop))})
	c.AddRule(&nftables.Rule{Table: t, Chain: forward, Exprs: concat(ifMatch(expr.MetaKeyOIFNAME, pre), verdict(expr.VerdictDrop))})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables install table %s: %w", m.cfg.Table, err)
	}
	return nil
}

// RemoveTable deletes the sbx table (tests, uninstall).
func (m *Manager) RemoveTable() error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	c.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: m.cfg.Table})
	return c.Flush()
}

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ifMatch matches an interface name by prefix (nft's "sbx*").
func ifMatch(key expr.MetaKey, prefix []byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: prefix},
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

func verdict(k expr.VerdictKind) []expr.Any {
	return []expr.Any{&expr.Verdict{Kind: k}}
}
