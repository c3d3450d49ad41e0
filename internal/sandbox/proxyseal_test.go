package sandbox

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/secrets"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestProxySeal: a record's proxy password is sealed, opens to the same
// policy, never stays in clear, and one that does not open applies no
// policy; records without a sealer or from before it still work.
func TestProxySeal(t *testing.T) {
	key := make([]byte, 32)
	seal, _ := secrets.NewSealer(key)
	key[0] = 1
	other, _ := secrets.NewSealer(key)
	var plain *store.Network
	if err := json.Unmarshal([]byte(`{"allowOut":["1.1.1.1"],"egressProxy":{"address":"p.test:1080","username":"u","password":"hunter2"}}`), &plain); err != nil {
		t.Fatal(err)
	}
	sealedBy := func(s Sealer) *store.Network { return (&Manager{cfg: Config{ProxySealer: s}}).sealNetwork(plain) }
	sealed := sealedBy(seal)
	if b, _ := json.Marshal(sealed); strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), "passwordSealed") {
		t.Fatalf("sealed record: %s", b)
	}
	if plain.EgressProxy.Password != "hunter2" || plain.EgressProxy.PasswordSealed != "" {
		t.Fatalf("sealing changed its input: %+v", plain.EgressProxy)
	}
	for _, tt := range []struct {
		name    string
		sealer  Sealer
		network *store.Network
		ok      bool
	}{
		{"sealed, same key", seal, sealed, true},
		{"sealed, other key", other, sealed, false},
		{"sealed, no key", nil, sealed, false},
		{"plain record, sealer", seal, plain, true},
		{"plain record, no sealer", nil, plain, true},
		{"no sealer when written", seal, sealedBy(nil), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := (&Manager{cfg: Config{ProxySealer: tt.sealer}}).recordPolicy(nil, tt.network)
			if (err == nil) != tt.ok {
				t.Fatalf("recordPolicy: %v, want ok=%v", err, tt.ok)
			}
			if err == nil && (p.Proxy == nil || p.Proxy.Password.Reveal() != "hunter2" || len(p.AllowNets) != 1) {
				t.Errorf("policy %+v", p)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error holds the password: %v", err)
			}
		})
	}
	if r := redactedJSON(sealed); strings.Contains(r, "password") {
		t.Errorf("redacted: %s", r)
	}
}
