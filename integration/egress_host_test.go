package integration

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/sbx-dev/sbx/internal/egress/egresstest"
)

// TestEgressGuardHostAddr: a domain the sandbox may reach whose DNS answer
// is one of the host's own addresses (here the uplink's 11.210.0.1, in no
// always-blocked range) does not take the SNI/Host guard to the host's own
// services on TCP 80/443: the guard dials from the host, where that address
// is local, so it refuses before dialing. The allowed name next to it still
// works, and the host's listeners see no connection at all. An egressProxy
// at that address (the daemon would dial it from the host, any port) is
// refused at create and update (400).
func TestEgressGuardHostAddr(t *testing.T) {
	for _, rt := range egressRuntimes {
		t.Run(rt, func(t *testing.T) { egressGuardHostAddr(t, rt) })
	}
}

func egressGuardHostAddr(t *testing.T, rt string) {
	lockHost(t)
	in := newInternet(t)
	in.mu.Lock()
	in.names["host.test"] = "11.210.0.1"
	in.mu.Unlock()
	var reached atomic.Int32
	for _, port := range []string{"80", "443"} {
		egresstest.Listen(t, "tcp4", "11.210.0.1:"+port, func(_ context.Context, c net.Conn) {
			reached.Add(1)
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nhost"))
			c.Close()
		})
	}
	d := startEgressDaemon(t, rt, "")
	sb := d.create(map[string]any{"network": map[string]any{"allowOut": []string{"allowed.test", "host.test", "11.210.0.0/24"}}})
	got := probe(t, sb, map[string]string{
		"allowed":    curl("http://allowed.test/"),
		"host-http":  "getent hosts host.test | grep -q 11.210.0.1 && " + curl("http://host.test/"),
		"host-https": "getent hosts host.test >/dev/null; curl -ksS -m 3 https://host.test/ | grep -q host",
		"host-ip":    curl("http://11.210.0.1/"),
	})
	expect(t, "host address through the guard", got, map[string]bool{"allowed": true,
		"host-http": false, "host-https": false, "host-ip": false})
	if n := reached.Load(); n != 0 {
		t.Errorf("the host's listeners on 11.210.0.1 got %d connections from the sandbox's egress", n)
	}
	proxy := map[string]any{"egressProxy": map[string]any{"address": "11.210.0.1:80"}}
	var e struct{ Code int }
	if code := d.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base", "network": proxy}, &e); code != 400 || e.Code != 400 {
		t.Errorf("create with an egressProxy at the host's address = %d %+v, want 400", code, e)
	}
	if code := d.api("PUT", "/sandboxes/"+sb.ID+"/network", proxy, &e); code != 400 || e.Code != 400 {
		t.Errorf("PUT an egressProxy at the host's address = %d %+v, want 400", code, e)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the host's listeners on 11.210.0.1 got %d connections", n)
	}
	if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Fatalf("delete = %d", code)
	}
}
