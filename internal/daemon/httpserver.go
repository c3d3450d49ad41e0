package daemon

import (
	"net/http"
	"time"
)

// serverLimits bound what one client connection can hold on the daemon.
// Whole-request read/write timeouts are not set here: sandbox traffic
// streams for as long as a process runs. The API bounds its own requests
// (internal/api: body read and response write deadlines).
type serverLimits struct {
	ReadHeader time.Duration // slowloris: headers must arrive within this
	Idle       time.Duration // keep-alive connections close after this
	MaxHeader  int           // larger request headers get 431
}

var defaultLimits = serverLimits{ReadHeader: 10 * time.Second, Idle: 2 * time.Minute, MaxHeader: 64 << 10}

// newHTTPServer is the daemon's one HTTP server (API and sandbox traffic).
func newHTTPServer(h http.Handler, l serverLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeader,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    l.MaxHeader,
	}
}
