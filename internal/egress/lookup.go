package egress

import "net/netip"

// Lookup finds the sandbox and its current policy by a packet's or a
// connection's source address; ok is false for an address that is no
// sandbox. The DNS filter and the guard ask it for every query and
// connection: it must be cheap and safe for concurrent use.
type Lookup func(src netip.Addr) (sandbox string, p Policy, ok bool)
