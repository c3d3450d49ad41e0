package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// networkUpdate is E2B's SandboxNetworkUpdateConfig. It replaces the egress
// settings as a whole: omitted fields are cleared.
type networkUpdate struct {
	AllowInternetAccess *bool           `json:"allow_internet_access,omitempty"`
	AllowOut            []string        `json:"allowOut,omitempty"`
	DenyOut             []string        `json:"denyOut,omitempty"`
	Rules               json.RawMessage `json:"rules,omitempty"`
	EgressProxy         json.RawMessage `json:"egressProxy,omitempty"`
}

// updateNetwork is PUT /sandboxes/{id}/network: 204 once the new policy is
// in force for new connections; 400 for bad rules; 404 unknown sandbox.
func (s *Server) updateNetwork(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	var req networkUpdate
	if !decode(w, r, &req) {
		return
	}
	in, err := s.mgr.Get(id)
	if err != nil {
		writeErr(w, err)
		return
	}
	n, err := s.parseNetwork(r.Context(), teamOf(r), req.AllowInternetAccess, mergeNetwork(in.Network, req))
	if err == nil {
		err = s.mgr.UpdateNetwork(r.Context(), id, req.AllowInternetAccess, n)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// mergeNetwork is the stored SandboxNetworkConfig with its egress fields
// replaced by the update's (the others, allowPublicTraffic,
// maskRequestHost and httpsPorts, are kept).
func mergeNetwork(stored *store.Network, u networkUpdate) *networkConfig {
	n := &networkConfig{AllowOut: u.AllowOut, DenyOut: u.DenyOut, Rules: u.Rules, EgressProxy: u.EgressProxy}
	if stored != nil {
		n.AllowPublicTraffic = stored.AllowPublicTraffic
		if stored.MaskRequestHost != "" {
			n.MaskRequestHost = &stored.MaskRequestHost
		}
		n.HTTPSPorts = stored.HTTPSPorts
	}
	return n
}

// parseNetwork is the one parse of a request's network settings (create's
// allow_internet_access and network, or an update merged onto the stored
// settings): every bad value is ErrInvalid here (400, errors.go), and the
// typed result is what the manager enforces, the record keeps and getInfo
// shows. The egress policy must parse (sandbox.NetworkPolicy: allowOut,
// denyOut, egressProxy) and the header rules pass checkRules. nil n is no
// settings (nil).
func (s *Server) parseNetwork(ctx context.Context, team string, allowNet *bool, n *networkConfig) (*store.Network, error) {
	spec, err := networkSpec(n)
	if err != nil {
		return nil, err
	}
	p, err := sandbox.NetworkPolicy(allowNet, spec)
	if err != nil {
		return nil, err
	}
	if spec != nil && present(spec.Rules) {
		if spec.Rules, err = s.checkRules(ctx, team, p, spec.Rules); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// networkSpec is n in its typed form. An egressProxy of null is none; a
// passwordSealed sent by a client is dropped (only the manager seals).
func networkSpec(n *networkConfig) (*store.Network, error) {
	if n == nil {
		return nil, nil
	}
	spec := &store.Network{AllowOut: n.AllowOut, DenyOut: n.DenyOut, AllowPublicTraffic: n.AllowPublicTraffic, Rules: n.Rules}
	if n.MaskRequestHost != nil {
		if err := sandbox.CheckMaskHost(*n.MaskRequestHost); err != nil {
			return nil, err
		}
		spec.MaskRequestHost = *n.MaskRequestHost
	}
	if len(n.HTTPSPorts) > 0 {
		if err := sandbox.CheckHTTPSPorts(n.HTTPSPorts); err != nil {
			return nil, err
		}
		spec.HTTPSPorts = n.HTTPSPorts
	}
	if present(n.EgressProxy) {
		spec.EgressProxy = &store.EgressProxy{}
		if err := json.Unmarshal(n.EgressProxy, spec.EgressProxy); err != nil {
			return nil, fmt.Errorf("%w: network: egressProxy: %w", sandbox.ErrInvalid, err)
		}
		spec.EgressProxy.PasswordSealed = ""
	}
	return spec, nil
}
