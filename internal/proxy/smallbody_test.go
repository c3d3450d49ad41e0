package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// firstReadListener records what the first Read of each accepted
// connection returned: what the proxy sent in its first write.
type firstReadListener struct {
	net.Listener
	mu    sync.Mutex
	first []string
}

func (l *firstReadListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstReadConn{Conn: c, l: l}, nil
}

func (l *firstReadListener) firsts() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.first...)
}

type firstReadConn struct {
	net.Conn
	l    *firstReadListener
	once sync.Once
}

func (c *firstReadConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.first = append(c.l.first, string(p[:max(n, 0)]))
		c.l.mu.Unlock()
	})
	return n, err
}

// TestSmallBodyOneWrite: a request body of a declared length up to
// smallBody reaches the sandbox in the same write as the headers (under
// gVisor every write is a segment through the netstack); a larger one still
// arrives whole, and a client that sends less than it declared gets an
// error, not a hang or a panic.
func TestSmallBodyOneWrite(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %v", len(b), err)
	})
	up := httptest.NewUnstartedServer(echo)
	fl := &firstReadListener{Listener: up.Listener}
	up.Listener = fl
	front, a, _ := setupServer(t, up)
	post := func(body string) string {
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/execute", strings.NewReader(body))
		req.Header.Set("E2b-Sandbox-Id", a.ID)
		req.Header.Set("E2b-Sandbox-Port", "49999")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return string(got)
	}
	small := `{"code":"1+1","marker":"small-body"}`
	if got := post(small); got != fmt.Sprintf("%d <nil>", len(small)) {
		t.Fatalf("small body: upstream read %q", got)
	}
	if f := fl.firsts(); len(f) != 1 || !strings.Contains(f[0], "\r\n\r\n"+small) {
		t.Fatalf("first write to the upstream: %q, want the headers and the body", f)
	}
	large := strings.Repeat("x", smallBody+1)
	if got := post(large); got != fmt.Sprintf("%d <nil>", len(large)) {
		t.Fatalf("large body: upstream read %q", got)
	}

	// declared 10 bytes, sent 3, then the client stops writing
	c, err := net.Dial("tcp", front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /execute HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 49999\r\n"+
		"Content-Length: 10\r\n\r\nabc", a.ID)
	_ = c.(*net.TCPConn).CloseWrite()
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("a short body was forwarded as complete")
		}
	}
}
