package store

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNetworkRecordFormat: a record written before the network settings
// were typed (the api's networkConfig re-marshalled, a sealed proxy
// password, rules as sent) loads into Network and is written back in the
// same form; one without network settings stays without.
func TestNetworkRecordFormat(t *testing.T) {
	old := `{"sandboxID":"aaaaaaaaaaaaaaaaaaaa","state":"running","templateID":"base","runtime":"runsc",` +
		`"allowInternetAccess":false,"network":{"allowOut":["1.1.1.1","*.example.com"],"denyOut":["0.0.0.0/0"],` +
		`"allowPublicTraffic":false,"rules":{"api.example.com":[{"transform":{"headers":{"X-Key":"{{ secrets.K }}"}}}]},` +
		`"egressProxy":{"address":"p.test:1080","passwordSealed":"c2VhbGVk","username":"u"}}}`
	r, err := decode([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	n := r.Network
	if n == nil || len(n.AllowOut) != 2 || n.DenyOut[0] != "0.0.0.0/0" || n.AllowPublicTraffic == nil || *n.AllowPublicTraffic ||
		n.EgressProxy == nil || n.EgressProxy.PasswordSealed != "c2VhbGVk" || n.EgressProxy.Username != "u" || !strings.Contains(string(n.Rules), "X-Key") {
		t.Fatalf("loaded %+v", n)
	}
	var was, now map[string]any
	_ = json.Unmarshal([]byte(old), &was)
	b, _ := json.Marshal(r)
	_ = json.Unmarshal(b, &now)
	if a, b := mustJSON(was["network"]), mustJSON(now["network"]); a != b {
		t.Errorf("written back\n%s\nwant\n%s", b, a)
	}
	if red := n.Redacted(); red.EgressProxy.PasswordSealed != "" || n.EgressProxy.PasswordSealed == "" {
		t.Errorf("Redacted: %+v (original %+v)", red.EgressProxy, n.EgressProxy)
	}
	r, err = decode([]byte(`{"sandboxID":"bbbbbbbbbbbbbbbbbbbb","state":"paused","templateID":"base","runtime":"runsc"}`))
	if err != nil || r.Network != nil {
		t.Fatalf("no network: %+v %v", r.Network, err)
	}
	if b, _ := json.Marshal(r); strings.Contains(string(b), `"network"`) {
		t.Errorf("no network written back as %s", b)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
