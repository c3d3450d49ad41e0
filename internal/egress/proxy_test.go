package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestParseProxy(t *testing.T) {
	long := strings.Repeat("u", 256)
	for _, tt := range []struct {
		name, addr, user, pass string
		ok                     bool
	}{
		{"ip", "1.2.3.4:1080", "", "", true},
		{"name", "Proxy.Example.com:1080", "u", "p", true},
		{"ipv6", "[2001:db8::1]:1080", "", "", true},
		{"user only", "p.example:1", "u", "", true},
		{"max creds", "p.example:1", strings.Repeat("u", 255), strings.Repeat("p", 255), true},
		{"no port", "1.2.3.4", "", "", false},
		{"port 0", "1.2.3.4:0", "", "", false},
		{"port high", "1.2.3.4:65536", "", "", false},
		{"port name", "1.2.3.4:socks", "", "", false},
		{"bad host", "bad_host!:1080", "", "", false},
		{"empty host", ":1080", "", "", false},
		{"long user", "p.example:1", long, "", false},
		{"long pass", "p.example:1", "u", long, false},
		{"pass without user", "p.example:1", "", "secret", false},
		{"nul", "p.example:1", "u\x00", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseProxy(tt.addr, tt.user, tt.pass)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseProxy(%q) err = %v, want ok=%v", tt.addr, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("err %v does not wrap ErrInvalid", err)
			}
			if err != nil && tt.pass != "" && strings.Contains(err.Error(), tt.pass) {
				t.Errorf("error quotes the password: %v", err)
			}
			if err == nil && p.Password.Reveal() != tt.pass {
				t.Errorf("password not kept")
			}
		})
	}
}

// TestSecretNeverPrints: no fmt verb, slog record or JSON shows a password.
func TestSecretNeverPrints(t *testing.T) {
	p := Proxy{Address: "a:1", Username: "u", Password: "hunter2"}
	pol := Policy{Proxy: &p}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		outs = append(outs, fmt.Sprintf(verb, p), fmt.Sprintf(verb, *pol.Proxy), fmt.Sprintf(verb, p.Password))
	}
	j, _ := json.Marshal(p)
	outs = append(outs, string(j))
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "proxy", p, "pw", p.Password)
	outs = append(outs, buf.String())
	for _, o := range outs {
		if strings.Contains(o, "hunter2") || strings.Contains(o, "68756e74657232") {
			t.Errorf("password printed: %s", o)
		}
	}
}

func TestResolutionsNameOf(t *testing.T) {
	now := time.Unix(1000, 0)
	r := &Resolutions{now: func() time.Time { return now }}
	ip := netip.MustParseAddr("1.2.3.4")
	r.Add("sb", "old.example", []netip.Addr{ip}, time.Minute)
	r.Add("sb", "New.Example.", []netip.Addr{ip}, time.Minute)
	r.Add("sb", "other.example", []netip.Addr{netip.MustParseAddr("5.6.7.8")}, time.Minute)
	for _, tt := range []struct {
		name, sb string
		accept   func(string) bool
		want     string
		ok       bool
	}{
		{"newest", "sb", nil, "new.example", true},
		{"filtered", "sb", func(n string) bool { return n == "old.example" }, "old.example", true},
		{"none accepted", "sb", func(string) bool { return false }, "", false},
		{"other sandbox", "sb2", nil, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := r.NameOf(tt.sb, ip, tt.accept)
			if got != tt.want || ok != tt.ok {
				t.Errorf("NameOf = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	now = now.Add(2 * time.Hour)
	if n, ok := r.NameOf("sb", ip, nil); ok {
		t.Errorf("expired entry returned: %q", n)
	}
}
