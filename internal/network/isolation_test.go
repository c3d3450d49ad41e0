package network

import (
	"net/netip"
	"testing"
	"time"
)

// TestIsolation: from inside a sandbox nothing is reachable, not the host,
// not another sandbox, not the outside; the control shows each path is open
// without the table, so the table is what closes it.
func TestIsolation(t *testing.T) {
	m := testManager(t, testConfig(4))
	a := setup(t, m, "a4aaaaaaaaaaaaaaaaaa")
	b := setup(t, m, "b4bbbbbbbbbbbbbbbbbb")
	if a.SandboxIP == b.SandboxIP || a.HostIP == b.HostIP {
		t.Fatal("duplicate addresses")
	}
	out := newOutside(t, 4)
	allowForwarding(t, a)
	allowForwarding(t, b)
	listenIn(t, b, 4999)
	hostPort := hostServer(t)
	if err := retry(10, func() error { return dialRead(out.addr.String()) }); err != nil {
		t.Fatalf("control: host cannot reach the outside: %v", err)
	}
	targets := map[string]string{
		"host side of own link":   netip.AddrPortFrom(a.HostIP, hostPort).String(),
		"host side of other link": netip.AddrPortFrom(b.HostIP, hostPort).String(),
		"host's other address":    netip.AddrPortFrom(out.hostAddr, hostPort).String(),
		"other sandbox":           netip.AddrPortFrom(b.SandboxIP, 4999).String(),
		"outside":                 out.addr.String(),
	}
	check := func(wantReach bool) {
		for name, addr := range targets {
			if err := dialFrom(t, a, addr); (err == nil) != wantReach {
				t.Errorf("sandbox → %s (%s): err %v, want reachable=%v", name, addr, err, wantReach)
			}
		}
	}
	check(false)
	if err := m.RemoveTable(); err != nil {
		t.Fatal(err)
	}
	check(true)                           // control: without the table every path is open
	if _, err := New(m.cfg); err != nil { // restores base and per-sandbox rules
		t.Fatal(err)
	}
	check(false)
	if c, err := a.Dial(t.Context(), 4999); err == nil {
		c.Close()
		t.Error("host reached a port nobody listens on")
	}
	listenIn(t, a, 4999)
	if c, err := a.Dial(t.Context(), 4999); err != nil {
		t.Errorf("host → sandbox after restore: %v", err)
	} else {
		c.Close()
	}
}

// reachWait bounds a check that a sandbox does reach something: on a loaded
// machine (CI runs every package's tests on 2 cores) a dial or a greeting can
// be late by seconds, and three quick tries (retry) then fail although the
// path is open. A check that it does not reach keeps retry's quick tries.
const reachWait = 20 * time.Second

// eventually runs fn until it succeeds, for up to reachWait; the last error
// if it never does.
func eventually(fn func() error) error {
	deadline := time.Now().Add(reachWait)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probe reports whether fn (a dial) succeeds, tried as a check expecting
// want: until it does (eventually) when want, else in 3 quick tries (retry).
func probe(want bool, fn func() error) bool {
	if want {
		return eventually(fn) == nil
	}
	return retry(3, fn) == nil
}

// retry runs fn up to n times (a loaded host may drop a first SYN or ARP).
func retry(n int, fn func() error) (err error) {
	for i := 0; i < n; i++ {
		if err = fn(); err == nil {
			return nil
		}
	}
	return err
}
