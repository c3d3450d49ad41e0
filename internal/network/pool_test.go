package network

import (
	"net/netip"
	"testing"
)

func TestPool(t *testing.T) {
	for _, tc := range []struct {
		subnet string
		slots  int
	}{
		{"10.200.0.0/16", 16383},
		{"10.231.0.0/22", 255},
		{"10.231.0.0/28", 3},
	} {
		prefix := netip.MustParsePrefix(tc.subnet)
		p := newPool(prefix)
		seen := map[netip.Addr]bool{}
		for i := range tc.slots {
			s, err := p.get()
			if err != nil {
				t.Fatalf("%s: get %d: %v", tc.subnet, i, err)
			}
			h, sb := p.addrs(s)
			if seen[h] || seen[sb] || !prefix.Contains(h) || !prefix.Contains(sb) || h == prefix.Addr() {
				t.Fatalf("%s: slot %d: bad or duplicate %s %s", tc.subnet, s, h, sb)
			}
			seen[h], seen[sb] = true, true
		}
		if _, err := p.get(); err == nil {
			t.Fatalf("%s: more than %d slots", tc.subnet, tc.slots)
		}
	}
}

func TestPoolRebuildAndReuse(t *testing.T) {
	p := newPool(netip.MustParsePrefix("10.200.0.0/16"))
	var hosts []netip.Addr
	for range 1200 {
		s, _ := p.get()
		h, _ := p.addrs(s)
		hosts = append(hosts, h)
	}
	q := newPool(netip.MustParsePrefix("10.200.0.0/16")) // after a restart
	for _, h := range hosts {
		if _, ok := q.reserve(h); !ok {
			t.Fatalf("reserve %s failed", h)
		}
	}
	for range 1000 {
		s, _ := q.get()
		if h, _ := q.addrs(s); h.Less(hosts[len(hosts)-1]) || h == hosts[len(hosts)-1] {
			t.Fatalf("rebuilt pool handed out live %s", h)
		}
	}
	for _, bad := range []string{"10.200.0.1", "10.200.0.6", "10.201.0.5", "fd00::1"} {
		if _, ok := q.reserve(netip.MustParseAddr(bad)); ok {
			t.Errorf("reserve(%s) accepted", bad)
		}
	}
	s, _ := p.reserve(hosts[0])
	p.put(s)
	if got, _ := p.get(); got == s {
		t.Error("a released slot was reused at once")
	}
}

func TestNames(t *testing.T) {
	m := &Manager{cfg: Config{IfPrefix: "sbx", NetNSDir: "/run/netns"}}
	seen := map[string]string{}
	for i := range 100000 {
		id := netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}).String()
		name := m.ifName(id)
		if len(name) != 15 || m.ifName(id) != name {
			t.Fatalf("ifName(%s) = %q", id, name)
		}
		if other, dup := seen[name]; dup {
			t.Fatalf("%s and %s share %s", id, other, name)
		}
		seen[name] = id
	}
	for id, ok := range map[string]bool{"abc123": true, "A-b_c": true, "": false, "..": false, "a/b": false, "a b": false} {
		if validID(id) != ok {
			t.Errorf("validID(%q) = %v", id, !ok)
		}
	}
}
