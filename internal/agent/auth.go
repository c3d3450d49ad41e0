package agent

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// rpcPrefixes are the Connect services; their errors are Connect errors.
var rpcPrefixes = []string{"/process.Process/", "/filesystem.Filesystem/"}

var connectErrors = connect.NewErrorWriter()

// authenticate requires X-Access-Token to match the token set by /init on
// every request except GET /health, /files (which accepts a token or a
// signed URL itself) and POST /init (which has its own check). The
// comparison is constant time (identity.State.CheckToken).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) || s.state.CheckToken(r.Header.Get("X-Access-Token")) {
			next.ServeHTTP(w, r)
			return
		}
		msg := "missing or invalid access token (X-Access-Token)"
		if isRPC(r) && connectErrors.IsSupported(r) {
			_ = connectErrors.Write(w, r, connect.NewError(connect.CodeUnauthenticated, errors.New(msg)))
			return
		}
		writeError(w, http.StatusUnauthorized, msg)
	})
}

func exempt(r *http.Request) bool {
	switch r.URL.Path {
	case "/health":
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	case "/files":
		return true
	case "/init":
		return r.Method == http.MethodPost
	}
	return false
}

func isRPC(r *http.Request) bool {
	for _, p := range rpcPrefixes {
		if strings.HasPrefix(r.URL.Path, p) {
			return true
		}
	}
	return false
}

// maxInitBytes bounds the /init body (env vars included).
const maxInitBytes = 1 << 20

// handleInit applies POST /init: the access token, default env vars, user
// and workdir (the env's E2B_* ids also go to /run/e2b, runids.go). E2B's other fields (timestamp, volumeMounts, ...) are ignored.
// The daemon may send it twice: once with only egressCA when it pools the
// sandbox (no token, no env: the CA is then on disk before any claim) and
// once with the tenant's identity at the claim, whose egressCA costs no
// file access then (trustMemo).
// Only the daemon may call it: with an init secret configured the request
// must carry it as X-Sbx-Init-Token; without one (local debugging) it must
// come while no access token is set or with the current one.
func (s *Server) handleInit(w http.ResponseWriter, r *http.Request) {
	if !s.initAllowed(r) {
		writeError(w, http.StatusUnauthorized, "/init is reserved to the sbx daemon")
		return
	}
	var in identity.Init
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxInitBytes))
	if err := dec.Decode(&in); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, "invalid /init body: "+err.Error())
		return
	}
	s.state.Apply(in)
	root := s.cfg.TrustRoot
	if root == "" {
		root = "/"
	}
	// A sandbox whose /run/e2b cannot be written still starts: its env has
	// the same ids.
	if err := s.runIDs.write(root, in.EnvVars); err != nil {
		s.log.Warn("sandbox ids not written to /run/e2b", "err", err)
	}
	if in.EgressCA != "" {
		// A template whose trust store cannot be written still starts: only
		// HTTPS to names with network.rules then fails (the client refuses
		// the daemon's certificate), which is closed, not open.
		if err := s.trust.install(root, in.EgressCA); err != nil {
			s.log.Warn("egress CA not installed", "err", err)
		} else {
			s.state.AddEnvDefaults(trustEnv())
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) initAllowed(r *http.Request) bool {
	if s.cfg.InitToken != "" {
		got := r.Header.Get("X-Sbx-Init-Token")
		return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.InitToken)) == 1
	}
	return s.state.CheckToken(r.Header.Get("X-Access-Token"))
}

// handleEnvs answers GET /envs: the default env vars set by /init.
func (s *Server) handleEnvs(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.state.Envs())
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with envd's JSON error body {code, message}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{status, msg})
}
