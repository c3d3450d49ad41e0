package front

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCreateBodyTimeout: the front reads a create's body itself, before
// any node checks a key; one that does not arrive within BodyTimeout is
// answered 400 and its connection freed. Before, a client without a key
// trickling its body held the connection and the buffer for as long as it
// liked.
func TestCreateBodyTimeout(t *testing.T) {
	f := newFront(&fakeDir{})
	f.BodyTimeout = 300 * time.Millisecond
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), fmt.Sprint(http.StatusBadRequest)) {
		t.Fatalf("a create whose body never came: %q, %v after %v; want 400 within the body timeout", buf[:n], err, time.Since(start))
	}
}
