package network

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// addRules installs l's objects (see nft.go) in one atomic batch.
func (m *Manager) addRules(l *Link) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	m.batchAdd(c, l.HostIf, l.SandboxIP)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables rules of %s: %w", l.HostIf, err)
	}
	return nil
}

// delRules removes the objects of host link ifname, whose sandbox address
// is ip (invalid: unknown, found in the set). Missing objects are no error:
// each is added, then deleted, in one atomic batch.
func (m *Manager) delRules(ifname string, ip netip.Addr) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	addrs, _ := m.sets()
	var keys [][]byte
	if ip.IsValid() {
		keys = [][]byte{addrKey(ifname, ip)}
	} else if keys, err = m.addrKeysOf(c, addrs, ifname); err != nil {
		return err
	}
	m.batchDel(c, ifname, keys)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables remove rules of %s: %w", ifname, err)
	}
	return nil
}

// batchAdd queues the objects of ifname with sandbox address ip.
func (m *Manager) batchAdd(c *nftables.Conn, ifname string, ip netip.Addr) {
	addrs, vmap := m.sets()
	m.batchSandbox(c, ifname)
	ch := &nftables.Chain{Name: chainName(ifname), Table: m.table()}
	_ = c.SetAddElements(addrs, []nftables.SetElement{{Key: addrKey(ifname, ip)}})
	_ = c.SetAddElements(vmap, []nftables.SetElement{{Key: ifKey(ifname),
		VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.Name}}})
}

// batchDel queues the removal of the objects of ifname (addrs keys given),
// each one first added so that the batch holds whatever exists.
func (m *Manager) batchDel(c *nftables.Conn, ifname string, keys [][]byte) {
	addrs, vmap := m.sets()
	ch := c.AddChain(&nftables.Chain{Name: chainName(ifname), Table: m.table()})
	c.FlushChain(ch)
	jump := []nftables.SetElement{{Key: ifKey(ifname), VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.Name}}}
	_ = c.SetAddElements(vmap, jump)
	_ = c.SetDeleteElements(vmap, jump)
	c.DelChain(ch)
	m.batchDelSandbox(c, ifname)
	for _, k := range keys {
		_ = c.SetAddElements(addrs, []nftables.SetElement{{Key: k}})
		_ = c.SetDeleteElements(addrs, []nftables.SetElement{{Key: k}})
	}
}

// addrKeysOf returns the keys of set addrs whose interface is ifname.
func (m *Manager) addrKeysOf(c *nftables.Conn, addrs *nftables.Set, ifname string) ([][]byte, error) {
	els, err := c.GetSetElements(addrs)
	if err != nil {
		return nil, fmt.Errorf("nftables list %s: %w", setAddrs, err)
	}
	var keys [][]byte
	for _, e := range els {
		if bytes.Equal(e.Key[:min(len(e.Key), unix.IFNAMSIZ)], ifKey(ifname)) {
			keys = append(keys, e.Key)
		}
	}
	return keys, nil
}

// ifKey is an interface name as nft holds it: NUL-padded to IFNAMSIZ.
func ifKey(ifname string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, ifname)
	return b
}

func addrKey(ifname string, ip netip.Addr) []byte {
	a := ip.As4()
	return append(ifKey(ifname), a[:]...)
}

// ifOfKey is the interface name in an addrs or sandboxes key.
func ifOfKey(k []byte) string {
	k = k[:min(len(k), unix.IFNAMSIZ)]
	return strings.TrimRight(string(k), "\x00")
}
