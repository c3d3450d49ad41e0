package daemon

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveWith runs newHTTPServer(h, l) on loopback and returns its address.
func serveWith(t *testing.T, l serverLimits) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}), l)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func TestDefaultLimitsAreSet(t *testing.T) {
	if defaultLimits.ReadHeader <= 0 || defaultLimits.ReadHeader > 30*time.Second ||
		defaultLimits.Idle <= 0 || defaultLimits.MaxHeader <= 0 || defaultLimits.MaxHeader > 1<<20 {
		t.Fatalf("daemon HTTP limits unset or too loose: %+v", defaultLimits)
	}
}

// Headers past MaxHeader get 431 (the daemon's real server, real limit).
func TestHugeHeaders431(t *testing.T) {
	addr := serveWith(t, defaultLimits)
	req, _ := http.NewRequest("GET", "http://"+addr+"/v2/sandboxes", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 2*defaultLimits.MaxHeader))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status = %d, want 431", resp.StatusCode)
	}
}

// Slowloris: a client that never finishes its headers is cut off at
// ReadHeader, and the server keeps serving others meanwhile.
func TestSlowlorisCutOff(t *testing.T) {
	l := defaultLimits
	l.ReadHeader = 500 * time.Millisecond
	addr := serveWith(t, l)
	var conns []net.Conn
	for i := 0; i < 50; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		conns = append(conns, c)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("server not serving beside 50 slow clients: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, c := range conns {
		// The server answers 408 and closes, or just closes: the read ends
		// at EOF long before this deadline.
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("slow client not cut off: %v", err)
		}
	}
}
