package integration

import (
	"testing"
)

// dnsRaw sends one raw DNS query (hex header, then qname bytes) for type A
// to the sandbox's resolver and succeeds only on a NOERROR answer.
func dnsRaw(qname string) string {
	return `python3 -c "import socket; ns=[l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')][0]; ` +
		`s=socket.socket(2,2); s.settimeout(3); s.sendto(bytes.fromhex('abcd01000001000000000000')+` + qname + `+b'\x00\x00\x01\x00\x01', (ns,53)); ` +
		`r=s.recv(512); exit(0 if r[3]&15==0 else 1)"`
}

// TestEgressDNSEscapedLabel: under allowOut "*.allowed.test", a query whose
// label holds a dot ("x.allowed" under "test": its text form is
// x\.allowed.test, which a text suffix match takes for a sub-domain) is
// refused and never reaches the upstream; a real sub-domain resolves.
func TestEgressDNSEscapedLabel(t *testing.T) {
	for _, rt := range egressRuntimes {
		t.Run(rt, func(t *testing.T) {
			lockHost(t)
			in := newInternet(t)
			d := startEgressDaemon(t, rt, "")
			sb := d.create(map[string]any{"network": map[string]any{"allowOut": []string{"*.allowed.test"}}})
			got := probe(t, sb, map[string]string{
				"sub-domain":    dnsRaw(`b'\x03www\x07allowed\x04test'`),
				"escaped-label": dnsRaw(`b'\x09x.allowed\x04test'`),
			})
			expect(t, "escaped label", got, map[string]bool{"sub-domain": true, "escaped-label": false})
			if !in.asked("www.allowed.test") || in.asked(`x\.allowed.test`) {
				t.Errorf("upstream queries %v: want www.allowed.test only", in.queries)
			}
			if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
				t.Fatalf("delete = %d", code)
			}
		})
	}
}
