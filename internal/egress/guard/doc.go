// Package guard is the SNI/Host guard of domain egress rules: a transparent
// TCP proxy for sandboxes' outbound TCP 80/443 that forwards a connection
// only if the name in its TLS ClientHello (SNI) or HTTP Host header is
// allowed by the sandbox's egress.Policy and the destination is an address
// that name resolved to for that sandbox (egress.Resolutions). Its parsers
// (ParseClientHello, ParseHTTPHost) read untrusted bytes and are fuzzed.
package guard
