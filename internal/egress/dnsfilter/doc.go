// Package dnsfilter is the DNS server sandboxes' queries are redirected to:
// it answers only names the sandbox's egress.Policy allows (resolved
// upstream, A/AAAA/CNAME/HTTPS/SRV/MX only, metadata names never), drops
// deny-all sandboxes' queries, reports every query (QueryLog) and hands the
// allowed answers' addresses to Resolved (nftables sets, egress.Resolutions).
package dnsfilter
