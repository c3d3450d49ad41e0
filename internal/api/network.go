package api

import (
	"encoding/json"
	"net/http"
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
	n := mergeNetwork(in.Network, req)
	if err = validateNetwork(req.AllowInternetAccess, n); err == nil {
		err = s.checkRules(r.Context(), teamOf(r), req.AllowInternetAccess, n)
	}
	if err == nil {
		raw, _ := json.Marshal(n)
		err = s.mgr.UpdateNetwork(r.Context(), id, req.AllowInternetAccess, raw)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// mergeNetwork is the stored SandboxNetworkConfig with its egress fields
// replaced by the update's (the others, e.g. allowPublicTraffic, are kept).
func mergeNetwork(stored json.RawMessage, u networkUpdate) *networkConfig {
	n := &networkConfig{}
	if len(stored) > 0 {
		_ = json.Unmarshal(stored, n)
	}
	n.AllowOut, n.DenyOut, n.Rules, n.EgressProxy = u.AllowOut, u.DenyOut, u.Rules, u.EgressProxy
	return n
}
