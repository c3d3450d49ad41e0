package sandbox

import (
	"encoding/base64"
	"fmt"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/store"
)

// Sealer seals and opens values with a key outside the database
// (secrets.Sealer).
type Sealer interface {
	Seal(value, aad []byte) []byte
	Open(sealed, aad []byte) ([]byte, error)
}

// proxyAAD binds a sealed value to its use (not to a sandbox: forks copy it).
var proxyAAD = []byte("sbx-egress-proxy-password")

// sealNetwork returns network settings as a record keeps them: with a
// ProxySealer, a copy whose egressProxy.password is replaced by
// passwordSealed. Settings without a password are returned as they are.
func (m *Manager) sealNetwork(network *store.Network) *store.Network {
	if m.cfg.ProxySealer == nil || network == nil || network.EgressProxy == nil || network.EgressProxy.Password == "" {
		return network
	}
	c := network.Clone()
	p := c.EgressProxy
	p.PasswordSealed = base64.StdEncoding.EncodeToString(m.cfg.ProxySealer.Seal([]byte(p.Password), proxyAAD))
	p.Password = ""
	return c
}

// recordPolicy is NetworkPolicy of a record's settings: a sealed proxy
// password is opened (in a copy, in memory only). One that does not open
// is an error (the policy is not applied: closed).
func (m *Manager) recordPolicy(allowNet *bool, network *store.Network) (egress.Policy, error) {
	if network == nil || network.EgressProxy == nil || network.EgressProxy.PasswordSealed == "" {
		return NetworkPolicy(allowNet, network)
	}
	if m.cfg.ProxySealer == nil {
		return egress.Policy{}, fmt.Errorf("egressProxy: sealed password and no key to open it")
	}
	b, err := base64.StdEncoding.DecodeString(network.EgressProxy.PasswordSealed)
	if err == nil {
		b, err = m.cfg.ProxySealer.Open(b, proxyAAD)
	}
	if err != nil {
		return egress.Policy{}, fmt.Errorf("egressProxy: sealed password does not open: %w", err)
	}
	opened := network.Clone()
	opened.EgressProxy.Password, opened.EgressProxy.PasswordSealed = string(b), ""
	return NetworkPolicy(allowNet, opened)
}
