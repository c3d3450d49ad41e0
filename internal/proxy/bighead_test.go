package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// headerServer answers every request on a raw listener with a response
// whose header holds size bytes; with stall it then never ends the header.
func headerServer(t *testing.T, size int, stall bool) (host string, port int) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { l.Close(); conns.Wait() })
	big := strings.Repeat("a", 4096)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				_, _ = http.ReadRequest(bufio.NewReader(c))
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n")
				for n := 0; n < size; n += len(big) + 11 {
					if _, err := io.WriteString(c, "X-Big: "+big+"\r\n"); err != nil {
						return
					}
				}
				if stall {
					_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
					_, _ = c.Read(make([]byte, 1)) // until the proxy hangs up
					return
				}
				_, _ = io.WriteString(c, "\r\n")
			}()
		}
	}()
	h, p, _ := net.SplitHostPort(l.Addr().String())
	port, _ = strconv.Atoi(p)
	return h, port
}

// TestUpstreamHeaderBounded: a sandbox's server (any port, the agent's
// included: root inside can answer on it) sends response headers of its
// choosing. The proxy takes at most untrusted.MaxHeaderBytes of them (502 past
// it), so that requests held open with headers that never end cannot fill
// the daemon's memory: before, each could hold 10 MiB (net/http's default)
// and 40 of them held hundreds of MiB, for a daemon every tenant shares.
func TestUpstreamHeaderBounded(t *testing.T) {
	get := func(host string, port int) int { rec, _ := askSandbox(host, port); return rec.Code }
	if code := get(headerServer(t, 16<<10, false)); code != http.StatusOK {
		t.Fatalf("a 16 KiB header: %d, want 200", code)
	}
	if code := get(headerServer(t, 2<<20, false)); code != http.StatusBadGateway {
		t.Fatalf("a 2 MiB header: %d, want 502", code)
	}
	host, port := headerServer(t, 4<<20, true)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	codes := make(chan int, 40)
	for range 40 {
		wg.Add(1)
		go func() { defer wg.Done(); codes <- get(host, port) }()
	}
	time.Sleep(2 * time.Second)
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("40 requests with 4 MiB headers that never end: heap grew %d MiB", grown>>20)
	if grown > 64<<20 {
		t.Errorf("heap grew %d MiB, want under 64", grown>>20)
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusBadGateway {
			t.Errorf("a never-ending 4 MiB header: %d, want 502", c)
		}
	}
}
