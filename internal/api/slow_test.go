package api_test

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A client that trickles its body is cut off at BodyTimeout instead of
// holding a connection and a goroutine forever.
func TestSlowBodyCutOff(t *testing.T) {
	a, _ := newAPI(t, nil)
	a.BodyTimeout = 300 * time.Millisecond
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", testKey)
	t0 := time.Now()
	go func() { // one byte every 100 ms: never finishes in time
		for i := 0; i < 100; i++ {
			if _, err := io.WriteString(c, " "); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("slow body not cut off: %v (read %q)", err, b)
	}
	if time.Since(t0) > 3*time.Second {
		t.Fatalf("slow body held the connection for %v", time.Since(t0))
	}
	if strings.Contains(string(b), "201 Created") {
		t.Fatalf("trickled request created a sandbox: %q", b)
	}
}
