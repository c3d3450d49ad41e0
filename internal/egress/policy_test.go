package egress

import (
	"errors"
	"net/netip"
	"testing"
)

func TestDomainMatch(t *testing.T) {
	tests := []struct {
		rule, name string
		want       bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "EXAMPLE.com.", true},
		{"example.com", "a.example.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "evil-example.com", false},
		{"*.example.com", "example.com.evil.net", false},
		{"*.example.com", "aexample.com", false},
		{"example.com", "example.com.evil.net", false},
	}
	for _, tt := range tests {
		d, err := ParseDomain(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Match(tt.name); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.rule, tt.name, got, tt.want)
		}
	}
}

func TestParseAndAddrs(t *testing.T) {
	no := false
	tests := []struct {
		name        string
		allowNet    *bool
		allow, deny []string
		addr        string
		want        bool
	}{
		{"default allows public", nil, nil, nil, "1.1.1.1", true},
		{"default blocks metadata", nil, nil, nil, "169.254.169.254", false},
		{"default blocks private", nil, nil, nil, "10.1.2.3", false},
		{"default blocks cgnat", nil, nil, nil, "100.100.100.200", false},
		{"default blocks mapped v6", nil, nil, nil, "::ffff:10.0.0.1", false},
		{"default blocks v6 ula", nil, nil, nil, "fd00:ec2::254", false},
		{"default blocks loopback", nil, nil, nil, "127.0.0.1", false},
		{"no internet", &no, nil, nil, "1.1.1.1", false},
		{"deny all but one", nil, []string{"1.1.1.1"}, []string{"0.0.0.0/0"}, "1.1.1.1", true},
		{"deny all but one, other", nil, []string{"1.1.1.1"}, []string{"0.0.0.0/0"}, "8.8.8.8", false},
		{"deny cidr", nil, nil, []string{"8.8.0.0/16"}, "8.8.8.8", false},
		{"allow cannot open private", nil, []string{"10.0.0.0/8"}, nil, "10.0.0.1", false},
		{"domains imply deny-all", nil, []string{"example.com"}, nil, "1.1.1.1", false},
	}
	for _, tt := range tests {
		p, err := Parse(tt.allowNet, tt.allow, tt.deny)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := p.AllowsAddr(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("%s: AllowsAddr(%s) = %v, want %v", tt.name, tt.addr, got, tt.want)
		}
	}
	for _, bad := range [][]string{{"not a domain!"}, {"*.*.x"}, {"-a.com"}} {
		if _, err := Parse(nil, bad, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%v) = %v", bad, err)
		}
	}
	if _, err := Parse(nil, nil, []string{"example.com"}); !errors.Is(err, ErrInvalid) {
		t.Error("denyOut accepted a domain")
	}
}

func TestAllowsName(t *testing.T) {
	p, _ := Parse(nil, []string{"*.pypi.org", "github.com"}, nil)
	for name, want := range map[string]bool{"files.pypi.org": true, "pypi.org": false, "github.com": true,
		"evil.com": false, "metadata.google.internal": false} {
		if got := p.AllowsName(name); got != want {
			t.Errorf("AllowsName(%q) = %v", name, got)
		}
	}
	open, _ := Parse(nil, nil, nil)
	if open.AllowsName("metadata.google.internal") || !open.AllowsName("example.org") {
		t.Error("open policy name rules wrong")
	}
}

func FuzzParseDomain(f *testing.F) {
	for _, s := range []string{"example.com", "*.a.b", "", "*.", "a..b", "xn--bcher-kva.ch"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDomain(s)
		if err == nil && (d.Name == "" || !ValidName(d.Name)) {
			t.Fatalf("ParseDomain(%q) = %+v", s, d)
		}
	})
}
