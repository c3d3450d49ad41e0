package sandbox

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sbx-dev/sbx/internal/egress"
)

// egressProxy is E2B's SandboxEgressProxyConfig as stored in a record's
// network settings; with a Config.ProxySealer the record holds
// PasswordSealed (base64 of the sealed password) instead of Password.
type egressProxy struct {
	Address        string `json:"address"`
	Username       string `json:"username,omitempty"`
	Password       string `json:"password,omitempty"`
	PasswordSealed string `json:"passwordSealed,omitempty"`
}

func (e *egressProxy) parse() (*egress.Proxy, error) {
	p, err := egress.ParseProxy(e.Address, e.Username, e.Password)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// checkNetwork validates network settings for a create or an update: the
// policy parses, and its proxy, if any, is one this node may dial
// (Config.ProxyCheck; ErrInvalid when it is not, ErrNotImpl without one).
func (m *Manager) checkNetwork(ctx context.Context, allowNet *bool, network json.RawMessage) error {
	p, err := NetworkPolicy(allowNet, network)
	if err != nil || p.Proxy == nil {
		return err
	}
	if m.cfg.ProxyCheck == nil {
		return fmt.Errorf("%w: network.egressProxy: this node has no egress tunnel", ErrNotImpl)
	}
	if err := m.cfg.ProxyCheck(ctx, *p.Proxy); err != nil {
		return fmt.Errorf("%w: network.egressProxy: %w", ErrInvalid, err)
	}
	return nil
}

// RedactNetwork returns network settings as they may be shown (getInfo, logs,
// events, the audit log): egressProxy.password removed. Settings that do not
// parse as an object are returned as they are (they hold no proxy).
func RedactNetwork(network json.RawMessage) json.RawMessage {
	var n map[string]json.RawMessage
	if len(network) == 0 || json.Unmarshal(network, &n) != nil || len(n["egressProxy"]) == 0 {
		return network
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(n["egressProxy"], &p) != nil || p == nil {
		return network
	}
	delete(p, "password")
	delete(p, "passwordSealed")
	n["egressProxy"], _ = json.Marshal(p)
	out, err := json.Marshal(n)
	if err != nil {
		return nil
	}
	return out
}
