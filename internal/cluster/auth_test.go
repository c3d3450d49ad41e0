package cluster

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSigner(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := &Signer{key: []byte("0123456789abcdef0123456789abcdef"), now: func() time.Time { return now }}
	other := &Signer{key: []byte("fedcba9876543210fedcba9876543210"), now: s.now}
	for _, c := range []struct {
		name         string
		sign         *Signer // nil: unsigned
		signNode     string
		method, uri  string // the request as it arrives (signed as GET /sandboxes/x?y=1)
		verifyNode   string
		skew         time.Duration
		header       string // if set, replaces the header
		client       string // if set, replaces the client address header
		wantUnsigned bool
	}{
		{"good", s, "n1", "GET", "/sandboxes/x?y=1", "n1", 0, "", "", false},
		{"other node", s, "n1", "GET", "/sandboxes/x?y=1", "n2", 0, "", "", true},
		{"other method", s, "n1", "DELETE", "/sandboxes/x?y=1", "n1", 0, "", "", true},
		{"other path", s, "n1", "GET", "/sandboxes/z?y=1", "n1", 0, "", "", true},
		{"other query", s, "n1", "GET", "/sandboxes/x?y=2", "n1", 0, "", "", true},
		{"other key", other, "n1", "GET", "/sandboxes/x?y=1", "n1", 0, "", "", true},
		{"too old", s, "n1", "GET", "/sandboxes/x?y=1", "n1", 31 * time.Second, "", "", true},
		{"from the future", s, "n1", "GET", "/sandboxes/x?y=1", "n1", -31 * time.Second, "", "", true},
		{"within skew", s, "n1", "GET", "/sandboxes/x?y=1", "n1", 29 * time.Second, "", "", false},
		{"unsigned", nil, "", "GET", "/sandboxes/x?y=1", "n1", 0, "", "", true},
		{"garbage", nil, "", "GET", "/sandboxes/x?y=1", "n1", 0, "v1.x.y", "", true},
		{"other version", nil, "", "GET", "/sandboxes/x?y=1", "n1", 0, "v2.1800000000.abc", "", true},
		{"other client", s, "n1", "GET", "/sandboxes/x?y=1", "n1", 0, "", "198.51.100.7", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := httptest.NewRequest("GET", "/sandboxes/x?y=1", nil)
			if c.sign != nil {
				c.sign.Sign(out, c.signNode)
			}
			in := httptest.NewRequest(c.method, c.uri, nil)
			in.Header.Set(AuthHeader, out.Header.Get(AuthHeader))
			in.Header.Set(ClientHeader, out.Header.Get(ClientHeader))
			if c.client != "" {
				in.Header.Set(ClientHeader, c.client)
			}
			if c.header != "" {
				in.Header.Set(AuthHeader, c.header)
			}
			v := &Signer{key: s.key, now: func() time.Time { return now.Add(c.skew) }}
			err := v.Verify(in, c.verifyNode)
			if got := errors.Is(err, ErrUnsigned); got != c.wantUnsigned {
				t.Fatalf("Verify = %v, want unsigned %v", err, c.wantUnsigned)
			}
		})
	}
}

func TestLoadSigner(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content string
		mode          os.FileMode
		ok            bool
	}{
		{"good", "0123456789abcdef0123456789abcdef\n", 0o600, true},
		{"short", "too-short", 0o600, false},
		{"readable by others", "0123456789abcdef0123456789abcdef", 0o644, false},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.content), c.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSigner(p); (err == nil) != c.ok {
			t.Errorf("%s: LoadSigner = %v, want ok %v", c.name, err, c.ok)
		}
	}
	if _, err := LoadSigner(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing secret file loaded")
	}
}
