package front

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
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

// TestInFlightBounded: the front forwards at most its in-flight bound of
// requests at once (each holds a connection to a node besides the
// client's); past it 429 with Retry-After, and a slot comes back when a
// request ends. /health is always answered. Before, nothing bounded them:
// 512 requests held through a front limited to 1024 descriptors took it to
// EMFILE.
func TestInFlightBounded(t *testing.T) {
	hold := make(chan struct{})
	nodeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold }))
	t.Cleanup(nodeSrv.Close)
	d := &fakeDir{nodes: []*store.Node{node("n1", nodeSrv.URL, 0)}, owners: map[string][2]string{"aaaaaaaaaaaaaaaaaaaa": {"n1", "running"}}}
	f := newFront(d)
	f.SetInFlight(2)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hold) })
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 2 {
		go get("/sandboxes/aaaaaaaaaaaaaaaaaaaa")
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.open.Total() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code := get("/sandboxes/aaaaaaaaaaaaaaaaaaaa"); code != http.StatusTooManyRequests {
		t.Fatalf("a third request while two are held: %d, want 429", code)
	}
	if code := get("/health"); code != http.StatusOK {
		t.Fatalf("/health while the bound is full: %d", code)
	}
}
