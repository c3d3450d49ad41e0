package clienttest

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/sbx-dev/sbx/api/proto/envd/filesystem/filesystemconnect"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
)

// DefaultUser is the user commands run as without an Authorization header.
const DefaultUser = "user"

type ctxKey struct{}

// reqInfo is what the envd router learned about a request.
type reqInfo struct {
	sb   *Sandbox
	user string
}

func info(ctx context.Context) reqInfo { return ctx.Value(ctxKey{}).(reqInfo) }

// envd routes sandbox traffic the way sbx's proxy does: the sandbox must
// exist, the port must be envd's and X-Access-Token must match.
func (s *Server) envd(w http.ResponseWriter, r *http.Request) {
	sb := s.lookup(r.Header.Get("E2b-Sandbox-Id"))
	switch {
	case sb == nil:
		WriteError(w, http.StatusNotFound, "sandbox %q not found", r.Header.Get("E2b-Sandbox-Id"))
		return
	case r.Header.Get("E2b-Sandbox-Port") != "49983":
		WriteError(w, http.StatusBadGateway, "nothing listens on port %q", r.Header.Get("E2b-Sandbox-Port"))
		return
	case r.Header.Get("X-Access-Token") != sb.Token:
		WriteError(w, http.StatusUnauthorized, "invalid access token")
		return
	}
	user, msg := basicUser(r)
	if msg != "" {
		WriteError(w, http.StatusUnauthorized, "%s", msg)
		return
	}
	mux := http.NewServeMux()
	mux.Handle(processconnect.NewProcessHandler(&procHandler{s: s}))
	mux.Handle(filesystemconnect.NewFilesystemHandler(&fsHandler{s: s}))
	mux.HandleFunc("/files", s.files)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, reqInfo{sb, user})))
}

// basicUser reads the user from "Authorization: Basic base64(user:)".
func basicUser(r *http.Request) (string, string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return DefaultUser, ""
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
	user, _, ok := strings.Cut(string(raw), ":")
	if !strings.HasPrefix(h, "Basic ") || err != nil || !ok || user == "" {
		return "", "malformed Authorization header"
	}
	return user, ""
}
