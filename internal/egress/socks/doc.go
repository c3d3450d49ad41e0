// Package socks tunnels sandboxes' outbound TCP through the SOCKS5 proxy a
// sandbox names (E2B's network.egressProxy). It has two halves:
//
//   - a SOCKS5 client (RFC 1928 CONNECT, RFC 1929 username/password):
//     Handshake speaks the protocol on a connection, Dialer reaches the
//     proxy (its address resolved at dial time, every address checked
//     against the ranges a proxy may not be in, one pinned per connection)
//     and hands over a tunnelled connection;
//   - Tunnel, the transparent listener the kernel redirects a proxied
//     sandbox's TCP to (internal/network): it recovers the original
//     destination (SO_ORIGINAL_DST), applies the sandbox's egress.Policy
//     exactly as the SNI/Host guard does, names the destination when the
//     sandbox resolved it through the DNS filter (or stated it in SNI/Host
//     under a domain allow-list), so a proxy at a public address resolves
//     the name itself (ATYP domain; one the operator opened is asked for
//     the checked address: Target), and splices the two. Nothing ever falls back to a
//     direct connection: a proxy that is down, refuses or rejects the
//     credentials resets the sandbox's connection, and the reason is
//     reported (Tunnel.Blocked: the audit log).
//
// Credentials are egress.Secret values: they reach the wire in
// Handshake and nowhere else (no error, log line or audit record).
package socks
