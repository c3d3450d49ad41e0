package sandbox

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/store"
)

// parseProxy is the egress.Proxy of network.egressProxy (its password open).
func parseProxy(e *store.EgressProxy) (*egress.Proxy, error) {
	p, err := egress.ParseProxy(e.Address, e.Username, e.Password)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// checkNetwork validates network settings for a create or an update: the
// policy parses, and its proxy, if any, is one this node may dial
// (Config.ProxyCheck; ErrInvalid when it is not, ErrNotImpl without one).
func (m *Manager) checkNetwork(ctx context.Context, allowNet *bool, network *store.Network) error {
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

// redactedJSON is network as events and logs show it: egressProxy's
// password (open or sealed) removed.
func redactedJSON(network *store.Network) string {
	if network == nil {
		return ""
	}
	b, err := json.Marshal(network.Redacted())
	if err != nil {
		return ""
	}
	return string(b)
}
