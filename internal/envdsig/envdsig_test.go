package envdsig

import "testing"

func TestSignMatchesSDK(t *testing.T) {
	// node -e 'crypto.subtle.digest("SHA-256", new TextEncoder().encode("/home/user/a.txt:read::tok")).then(b=>console.log(btoa(String.fromCharCode(...new Uint8Array(b))).replace(/=+$/,"")))'
	const sdkVector = "Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR/kLdvIY"
	if got := Sign("/home/user/a.txt", "read", "", "tok", 0); got != "v1_"+sdkVector {
		t.Fatalf("Sign = %s", got)
	}
}

func TestSignBindsEverything(t *testing.T) {
	base := Sign("p", "read", "u", "tok", 1)
	for name, other := range map[string]string{
		"path": Sign("q", "read", "u", "tok", 1), "op": Sign("p", "write", "u", "tok", 1),
		"user": Sign("p", "read", "v", "tok", 1), "token": Sign("p", "read", "u", "tok2", 1),
		"expiry": Sign("p", "read", "u", "tok", 2), "no expiry": Sign("p", "read", "u", "tok", 0),
	} {
		if other == base {
			t.Errorf("%s is not bound", name)
		}
	}
}

func TestParseExpiry(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{{"", 0, true}, {"1700000000", 1700000000, true}, {"0", 0, false}, {"-5", -5, false}, {"1e9", 0, false}, {"99999999999999999999", 9223372036854775807, false}} {
		got, ok := ParseExpiry(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseExpiry(%q) = %d, %v", tc.in, got, ok)
		}
	}
}

// TestSignerReused: one Signer signs for many tokens as Sign does for each
// (its hashed prefix is cloned, never changed).
func TestSignerReused(t *testing.T) {
	s := NewSigner("/home/user/a.txt", "write", "user")
	for _, tc := range []struct {
		token string
		exp   int64
	}{{"tok", 0}, {"tok2", 1700000000}, {"tok", 0}, {"", 5}} {
		if got, want := s.Sign(tc.token, tc.exp), Sign("/home/user/a.txt", "write", "user", tc.token, tc.exp); got != want {
			t.Fatalf("Signer.Sign(%q, %d) = %s, want %s", tc.token, tc.exp, got, want)
		}
	}
}
