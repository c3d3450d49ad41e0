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
