package guard

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress/egresstest"
)

// echoServer answers every connection by echoing what it reads.
func echoServer(b *testing.B) string {
	return egresstest.Listen(b, "tcp4", "127.0.0.1:0", func(_ context.Context, c net.Conn) {
		defer c.Close()
		_, _ = io.Copy(c, c)
	})
}

var benchRequest = []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")

// BenchmarkGuardConnect: connection setup through the guard (accept, name
// check, dial, first byte back) against the same round trip direct.
func BenchmarkGuardConnect(b *testing.B) {
	up := echoServer(b)
	e := startGuard(b, guardSetup{policy: allowExample(b), dst: resolvedIP + ":80",
		upstream: up, resolved: resolvedExample()})
	for _, bc := range []struct{ name, addr string }{{"direct", up}, {"guard", e.addr}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, len(benchRequest))
			for b.Loop() {
				c, err := net.Dial("tcp4", bc.addr)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = c.Write(benchRequest)
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}

// BenchmarkGuardThroughput: bytes echoed through one guarded connection.
func BenchmarkGuardThroughput(b *testing.B) {
	e := startGuard(b, guardSetup{policy: allowExample(b), dst: resolvedIP + ":80",
		upstream: echoServer(b), resolved: resolvedExample()})
	c, err := net.Dial("tcp4", e.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write(benchRequest)
	if _, err := io.ReadFull(c, make([]byte, len(benchRequest))); err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 256<<10)
	b.SetBytes(int64(len(chunk)))
	go func() {
		for range b.N {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	if _, err := io.CopyN(io.Discard, c, int64(b.N*len(chunk))); err != nil {
		b.Fatal(err)
	}
}
