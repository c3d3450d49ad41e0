package sandboxtest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// StartAgent runs a fake agent on loopback that answers /health and accepts
// /init only with an init token; it returns its port.
func StartAgent(t testing.TB) int {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			w.WriteHeader(http.StatusNoContent)
		case "/init":
			if r.Header.Get("X-Sbx-Init-Token") == "" {
				http.Error(w, "no init token", http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("X-Fake-Agent", r.URL.Path)
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	t.Cleanup(srv.Close)
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(p)
	return port
}
