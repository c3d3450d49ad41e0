package daemon

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestConnLimit: idle keep-alive connections up to the limit are held; the
// next connection is served only once one of them closes (it waited in the
// kernel's queue, holding no descriptor of the daemon); a closed listener
// returns from a waiting Accept.
func TestConnLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := newConnLimit(4)
	lln := lim.wrap(ln)
	srv := newHTTPServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), defaultLimits)
	go srv.Serve(lln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	ask := func(c net.Conn, wait time.Duration) error {
		_ = c.SetDeadline(time.Now().Add(wait))
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		_, err := http.ReadResponse(bufio.NewReader(c), nil)
		return err
	}
	var idle []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := ask(c, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c) // kept alive, idle
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if err := ask(extra, 300*time.Millisecond); err == nil {
		t.Fatal("a connection past the limit was served")
	}
	idle[0].Close()
	if err := ask(extra, 2*time.Second); err != nil {
		t.Fatalf("waiting connection not served after one closed: %v", err)
	}
	if len(lim.sem) != 4 {
		t.Fatalf("%d slots held, want 4", len(lim.sem))
	}
}
