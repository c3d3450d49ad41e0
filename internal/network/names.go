package network

import (
	"crypto/sha256"
	"encoding/base32"
	"path/filepath"
	"strings"
)

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ifName is the host-side link name of id: the prefix and 12 chars (60 bits)
// of the id's sha256, so any id fits IFNAMSIZ and distinct ids practically
// never share a name. A collision is still detected: the link's alias holds
// its id, and Setup fails rather than reuse a link with another alias.
func (m *Manager) ifName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return m.cfg.IfPrefix + b32.EncodeToString(sum[:])[:12]
}

// nsPath is where the netns of id is bind-mounted.
func (m *Manager) nsPath(id string) string {
	return filepath.Join(m.cfg.NetNSDir, m.cfg.IfPrefix+"-"+id)
}

// idFromNSFile returns the id whose netns file is name, if it is one of ours.
func (m *Manager) idFromNSFile(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, m.cfg.IfPrefix+"-")
	return id, ok && validID(id)
}

// chainName is the per-sandbox nftables chain of host link ifname.
func chainName(ifname string) string { return "sandbox-" + ifname }

// validID accepts 1–64 chars of [A-Za-z0-9_-]: safe in a path and an alias.
func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validName accepts lowercase letters and digits.
func validName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// nftKeywords are the names of 1–3 chars of [a-z0-9] that the nft command
// (1.0.6, Debian 12) will not parse as a table name (`nft -c add table inet
// <name>` over all of them, letter first). sbx itself speaks netlink and
// could use them, but an operator could then not list or delete the table
// by name.
var nftKeywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`add ah all and arp cpu ct day dst dup ecn eq esp fib fwd
		ge get gt hbh iif ip ip6 le log lt map mh ne not oif or osf rt rt0 rt2 set srh
		tcp th udp xor xt`) {
		m[k] = true
	}
	return m
}()
