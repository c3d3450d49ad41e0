package daemon

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
)

// serverLimits bound what one client connection can hold on the daemon.
// Whole-request read/write timeouts are not set here: sandbox traffic
// streams for as long as a process runs. The API bounds its own requests
// (internal/api: body read and response write deadlines).
type serverLimits struct {
	ReadHeader time.Duration // slowloris: headers must arrive within this
	Idle       time.Duration // keep-alive connections close after this
	MaxHeader  int           // larger request headers get 431 {code, message}
	HardHeader int           // the server reads no more (net/http's plain-text 431 past it)
}

var defaultLimits = serverLimits{ReadHeader: 10 * time.Second, Idle: 2 * time.Minute, MaxHeader: 64 << 10, HardHeader: 128 << 10}

// newHTTPServer is the daemon's one HTTP server (API and sandbox traffic).
func newHTTPServer(h http.Handler, l serverLimits) *http.Server {
	return &http.Server{
		Handler:           headerLimit(h, l.MaxHeader),
		ReadHeaderTimeout: l.ReadHeader,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    l.HardHeader,
		ConnContext:       withConn,
	}
}

// headerLimit answers 431 with the API's {code, message} to a request whose
// header is larger than limit, and passes the others to h. net/http answers
// its own 431 in plain text, so the server's bound (HardHeader) is set above
// limit: a header up to it gets the API's error, a larger one is not read.
func headerLimit(h http.Handler, limit int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerSize(r) > limit {
			w.Header().Set("Connection", "close")
			api.WriteError(w, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request headers are larger than %d bytes", limit))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// headerSize is the size of r's request line and header as HTTP/1.1 sends
// them (what http.Server.MaxHeaderBytes counts).
func headerSize(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 + len("Host: \r\n") + len(r.Host) + 2
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(": \r\n") + len(v)
		}
	}
	return n
}
