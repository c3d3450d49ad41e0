package sandbox

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/sbx-dev/sbx/internal/egress"
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
// ProxySealer, egressProxy.password is replaced by passwordSealed.
// Settings without a password are returned as they are.
func (m *Manager) sealNetwork(network json.RawMessage) json.RawMessage {
	return m.rewriteProxy(network, func(p *egressProxy) error {
		if m.cfg.ProxySealer == nil || p.Password == "" {
			return nil
		}
		p.PasswordSealed = base64.StdEncoding.EncodeToString(m.cfg.ProxySealer.Seal([]byte(p.Password), proxyAAD))
		p.Password = ""
		return nil
	})
}

// recordPolicy is NetworkPolicy of a record's settings: a sealed proxy
// password is opened (in memory only). One that does not open is an error
// (the policy is not applied: closed).
func (m *Manager) recordPolicy(allowNet *bool, network json.RawMessage) (egress.Policy, error) {
	var openErr error
	opened := m.rewriteProxy(network, func(p *egressProxy) error {
		if p.PasswordSealed == "" {
			return nil
		}
		if m.cfg.ProxySealer == nil {
			return fmt.Errorf("egressProxy: sealed password and no key to open it")
		}
		b, err := base64.StdEncoding.DecodeString(p.PasswordSealed)
		if err == nil {
			b, err = m.cfg.ProxySealer.Open(b, proxyAAD)
		}
		if err != nil {
			return fmt.Errorf("egressProxy: sealed password does not open: %w", err)
		}
		p.Password, p.PasswordSealed = string(b), ""
		return nil
	}, &openErr)
	if openErr != nil {
		return egress.Policy{}, openErr
	}
	return NetworkPolicy(allowNet, opened)
}

// rewriteProxy applies fn to network's egressProxy and returns the
// settings with it replaced; anything that does not parse is returned as
// it is (NetworkPolicy reports it). fn's error goes to errp, if given.
func (m *Manager) rewriteProxy(network json.RawMessage, fn func(*egressProxy) error, errp ...*error) json.RawMessage {
	var n map[string]json.RawMessage
	if len(network) == 0 || json.Unmarshal(network, &n) != nil || !hasValue(n["egressProxy"]) {
		return network
	}
	var p egressProxy
	if json.Unmarshal(n["egressProxy"], &p) != nil {
		return network
	}
	if err := fn(&p); err != nil {
		for _, e := range errp {
			*e = err
		}
		return network
	}
	n["egressProxy"], _ = json.Marshal(p)
	out, err := json.Marshal(n)
	if err != nil {
		return network
	}
	return out
}

func hasValue(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
