package daemon

import (
	"encoding/json"
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
		defaultLimits.Idle <= 0 || defaultLimits.MaxHeader <= 0 || defaultLimits.MaxHeader > 1<<20 ||
		defaultLimits.HardHeader < defaultLimits.MaxHeader || defaultLimits.HardHeader > 1<<20 {
		t.Fatalf("daemon HTTP limits unset or too loose: %+v", defaultLimits)
	}
}

// TestHugeHeaders431: headers past MaxHeader get 431 with the API's
// {code, message} (the daemon's real server, real limits; before, net/http's
// plain text); past HardHeader the server reads no further and answers its
// own 431; a header under MaxHeader is served.
func TestHugeHeaders431(t *testing.T) {
	addr := serveWith(t, defaultLimits)
	tests := []struct {
		name string
		size int
		code int
		json bool
	}{
		{"under the limit", defaultLimits.MaxHeader - 1024, http.StatusNoContent, false},
		{"past the limit", defaultLimits.MaxHeader + 1024, http.StatusRequestHeaderFieldsTooLarge, true},
		{"at the hard bound", defaultLimits.HardHeader, http.StatusRequestHeaderFieldsTooLarge, true},
		{"past the hard bound", 4 * defaultLimits.HardHeader, http.StatusRequestHeaderFieldsTooLarge, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://"+addr+"/v2/sandboxes", nil)
			req.Header.Set("X-Big", strings.Repeat("a", tt.size))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			isJSON := json.NewDecoder(resp.Body).Decode(&body) == nil && body.Code == tt.code && body.Message != ""
			if resp.StatusCode != tt.code || isJSON != tt.json {
				t.Fatalf("status = %d, JSON {code, message} %v; want %d, %v", resp.StatusCode, isJSON, tt.code, tt.json)
			}
		})
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
