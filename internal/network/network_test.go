package network

import (
	"context"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func TestSetupConfiguresBothEnds(t *testing.T) {
	m := testManager(t, testConfig(1))
	l := setup(t, m, "a1aaaaaaaaaaaaaaaaaa")
	if len(l.HostIf) > 15 || !strings.HasPrefix(l.HostIf, "n01") || l.NetNSPath != "/run/netns/n01-"+l.ID {
		t.Fatalf("names: %+v", l)
	}
	ns := strings.TrimPrefix(l.NetNSPath, "/run/netns/")
	inside := map[string][]string{
		"eth0 address":  {"-4", "-o", "addr", "show", "dev", "eth0"},
		"default route": {"-4", "route", "show", "default"},
		"links":         {"-o", "link"},
		"v6 addresses":  {"-6", "addr"},
	}
	got := map[string]string{}
	for k, args := range inside {
		got[k] = run(t, "ip", append([]string{"netns", "exec", ns, "ip"}, args...)...)
	}
	for _, c := range []struct{ what, want string }{
		{"eth0 address", "inet " + l.SandboxIP.String() + "/30"},
		{"default route", "default via " + l.HostIP.String() + " dev eth0"},
		{"links", "eth0@"},
	} {
		if !strings.Contains(got[c.what], c.want) {
			t.Errorf("%s inside: %q lacks %q", c.what, got[c.what], c.want)
		}
	}
	if strings.Contains(got["links"], "state DOWN") || got["v6 addresses"] != "" {
		t.Errorf("inside: links %q, v6 %q", got["links"], got["v6 addresses"])
	}
	host := run(t, "ip", "-d", "-o", "addr", "show", "dev", l.HostIf)
	if !strings.Contains(host, "inet "+l.HostIP.String()+"/30") || strings.Contains(host, "inet6") {
		t.Errorf("host side: %q", host)
	}
	if !strings.Contains(run(t, "ip", "-o", "link", "show", "dev", l.HostIf), "alias "+l.ID) {
		t.Errorf("host link has no alias %s", l.ID)
	}
	for key, want := range map[string]string{"ipv6/conf/" + l.HostIf + "/disable_ipv6": "1", "ipv4/conf/" + l.HostIf + "/forwarding": "1"} {
		if b, _ := os.ReadFile("/proc/sys/net/" + key); strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q, want %s", key, b, want)
		}
	}
	listenIn(t, l, 49983)
	c, err := l.Dial(context.Background(), 49983)
	if err != nil {
		t.Fatalf("host → sandbox: %v", err)
	}
	c.Close()
}

func TestSetupIsIdempotentAndSerialised(t *testing.T) {
	m := testManager(t, testConfig(2))
	const id = "a2aaaaaaaaaaaaaaaaaa"
	links := make(chan *Link, 8)
	for range 8 {
		go func() {
			l, err := m.Setup(context.Background(), id)
			if err != nil {
				t.Error(err)
			}
			links <- l
		}()
	}
	first := <-links
	for range 7 {
		if l := <-links; l != first {
			t.Fatalf("concurrent Setup of one id gave %+v and %+v", first, l)
		}
	}
	if ids := m.List(); len(ids) != 1 || ids[0] != id {
		t.Fatalf("List = %v", ids)
	}
}

func TestBadInput(t *testing.T) {
	m := testManager(t, testConfig(3))
	for _, id := range []string{"", "../../etc", "a/b", "with space", strings.Repeat("x", 65)} {
		if _, err := m.Setup(context.Background(), id); err == nil {
			t.Errorf("Setup(%q) succeeded", id)
		}
		if err := m.Teardown(context.Background(), id); err == nil {
			t.Errorf("Teardown(%q) succeeded", id)
		}
	}
	for _, cfg := range []Config{
		{Subnet: netip.MustParsePrefix("fd00::/64")},
		{Subnet: netip.MustParsePrefix("10.0.0.0/30")},
		{IfPrefix: "toolong"},
		{IfPrefix: "A-"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
