package integration

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress/egresstest"
)

// TestTableRemovedHeals: the daemon's nftables table deleted under it (an
// operator's nft flush ruleset, a firewall reload) no longer breaks every
// later create (500 until a restart) nor leaves the running sandboxes
// unfenced: the next create rebuilds the table and succeeds, a running
// sandbox is closed to the host again, and the periodic check rebuilds it
// without a create, and so does a table flushed (nft flush table: its
// rules gone, the table kept). Nothing of the sandboxes is left in the table after
// their delete.
func TestTableRemovedHeals(t *testing.T) {
	d := startDaemon(t, "crun", "")
	var reached atomic.Int32
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	egresstest.Serve(t, ln, func(_ context.Context, c net.Conn) { reached.Add(1); c.Write([]byte("host")); c.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	a := d.create(nil)
	// The gateway (the resolver in resolv.conf) is the host's side of a's link.
	probeHost := fmt.Sprintf(`gw=$(awk '/^nameserver/{print $2; exit}' /etc/resolv.conf); curl -sS -m 2 http://$gw:%d/`, port)
	closed := func(when string) {
		t.Helper()
		if out, code := a.run("user", probeHost, 20*time.Second); code == 0 || reached.Load() != 0 {
			t.Errorf("%s: the sandbox reached the host (exit %d, %d connections): %s", when, code, reached.Load(), out)
		}
	}
	closed("before")
	deleteTable(t, d.netPrefix)
	b := &sandbox{d: d}
	if code := d.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base"}, b); code != 201 {
		t.Fatalf("create after the table's removal = %d, want 201\n%s", code, tail(d.log.String(), 2000))
	}
	t.Cleanup(func() { d.deleteQuiet(b.ID) })
	closed("after the create's rebuild")

	deleteTable(t, d.netPrefix)
	deadline := time.Now().Add(15 * time.Second)
	for exec.Command("nft", "list", "table", "inet", d.netPrefix).Run() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the table was not rebuilt within 15 s without a create")
		}
		time.Sleep(200 * time.Millisecond)
	}
	closed("after the periodic rebuild")
	if n := strings.Count(d.log.String(), "rebuilt it from memory"); n != 2 {
		t.Errorf("rebuilds logged %d times, want 2", n)
	}

	// nft flush table keeps the table and removes its rules: as unfenced.
	if out, err := exec.Command("nft", "flush", "table", "inet", d.netPrefix).CombinedOutput(); err != nil {
		t.Fatalf("nft flush table: %v: %s", err, out)
	}
	deadline = time.Now().Add(15 * time.Second)
	for strings.Count(d.log.String(), "rebuilt it from memory") < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the flushed table was not rebuilt within 15 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	closed("after the flushed table's rebuild")

	for _, sb := range []*sandbox{a, b} {
		if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
			t.Fatalf("delete %s = %d", sb.ID, code)
		}
		out, _ := exec.Command("nft", "list", "table", "inet", d.netPrefix).CombinedOutput()
		if link := linkName(d.netPrefix, sb.ID); strings.Contains(string(out), link) {
			t.Errorf("nft objects of %s (%s) left after its delete", sb.ID, link)
		}
	}
}

// deleteTable removes the daemon's table as `nft flush ruleset` would.
func deleteTable(t *testing.T, prefix string) {
	t.Helper()
	if out, err := exec.Command("nft", "delete", "table", "inet", prefix).CombinedOutput(); err != nil {
		t.Fatalf("nft delete table inet %s: %v: %s", prefix, err, out)
	}
}
