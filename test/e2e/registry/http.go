package main

import (
	"io"
	"log"
	"net/http"
	"strings"
	"time"
)

// basicAuth requires user/pass for every path under prefix. The API root
// /v2/ answers 401 with a Basic challenge to a request without valid
// credentials (as Docker Hub does): clients probe it to learn how to
// authenticate, and one that got 200 there would never send credentials.
// Anonymous requests for the other repositories are served.
func basicAuth(next http.Handler, prefix, user, pass string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/v2" || p == "/v2/" || strings.HasPrefix(p, prefix) {
			u, pw, ok := r.BasicAuth()
			if !ok || u != user || pw != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="sbx-test-registry"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`+"\n")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
	n    int64
}

func (w *statusWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: 200}
		next.ServeHTTP(sw, r)
		log.Printf("%s %s %d %dB %s", r.Method, r.URL.RequestURI(), sw.code, sw.n, time.Since(t).Round(time.Millisecond))
	})
}
