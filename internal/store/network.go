package store

import (
	"encoding/json"
	"slices"
)

// Network is a sandbox's network settings, E2B's SandboxNetworkConfig, as
// validated once at the API edge (sandbox.ParseNetwork) and carried typed
// through the manager into the record. Its JSON is the format records have
// always stored (the api's request body re-marshalled), so older records
// load unchanged. A Network in a record is never
// changed in place, only replaced (copies of the record, e.g. from
// sandbox.Manager.Get, share it): Clone before changing one.
type Network struct {
	AllowOut           []string        `json:"allowOut,omitempty"`
	DenyOut            []string        `json:"denyOut,omitempty"`
	AllowPublicTraffic *bool           `json:"allowPublicTraffic,omitempty"`
	MaskRequestHost    string          `json:"maskRequestHost,omitempty"` // the Host sandbox ports see, "${PORT}" the port (sandbox.MaskHost)
	HTTPSPorts         []int           `json:"httpsPorts,omitempty"`      // sandbox ports the proxy speaks TLS to (sandbox.CheckHTTPSPorts)
	Rules              json.RawMessage `json:"rules,omitempty"`           // validated (egress/rules), domain keys lower case, shown as sent
	EgressProxy        *EgressProxy    `json:"egressProxy,omitempty"`
}

// EgressProxy is E2B's SandboxEgressProxyConfig. A record made with a
// secrets key holds PasswordSealed (base64 of the sealed password, see
// sandbox/proxyseal.go) and no Password.
type EgressProxy struct {
	Address        string `json:"address"`
	Username       string `json:"username,omitempty"`
	Password       string `json:"password,omitempty"`
	PasswordSealed string `json:"passwordSealed,omitempty"`
}

// Clone is a deep copy of n (nil for nil): the slices, rules and proxy are
// not shared, so a copy may be sealed or redacted without touching n.
func (n *Network) Clone() *Network {
	if n == nil {
		return nil
	}
	c := *n
	c.AllowOut, c.DenyOut = slices.Clone(n.AllowOut), slices.Clone(n.DenyOut)
	c.Rules, c.HTTPSPorts = slices.Clone(n.Rules), slices.Clone(n.HTTPSPorts)
	if n.AllowPublicTraffic != nil {
		v := *n.AllowPublicTraffic
		c.AllowPublicTraffic = &v
	}
	if n.EgressProxy != nil {
		p := *n.EgressProxy
		c.EgressProxy = &p
	}
	return &c
}

// Redacted is n as it may be shown (getInfo, events, logs): the proxy's
// password and sealed password removed.
func (n *Network) Redacted() *Network {
	c := n.Clone()
	if c != nil && c.EgressProxy != nil {
		c.EgressProxy.Password, c.EgressProxy.PasswordSealed = "", ""
	}
	return c
}
