package clienttest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/health" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Header.Get("X-API-Key") != s.APIKey {
		WriteError(w, http.StatusUnauthorized, "invalid or missing X-API-Key")
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/sandboxes", s.create)
	mux.HandleFunc("GET /v2/sandboxes", s.list)
	mux.HandleFunc("GET /sandboxes/{id}", s.withSandbox(s.get))
	mux.HandleFunc("DELETE /sandboxes/{id}", s.withSandbox(s.kill))
	mux.HandleFunc("POST /sandboxes/{id}/timeout", s.withSandbox(s.timeout))
	mux.HandleFunc("POST /v2/sandboxes/{id}/connect", s.withSandbox(s.connect))
	mux.HandleFunc("GET /sandboxes/{id}/metrics", s.withSandbox(s.metrics))
	mux.HandleFunc("GET /templates", s.templates)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
	})
	mux.ServeHTTP(w, r)
}

type createBody struct {
	TemplateID string            `json:"templateID"`
	Timeout    *int64            `json:"timeout"`
	Metadata   map[string]string `json:"metadata"`
	EnvVars    map[string]string `json:"envVars"`
	Runtime    string            `json:"runtime"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var b createBody
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&b); err != nil {
		WriteError(w, http.StatusBadRequest, "bad body: %v", err)
		return
	}
	if msg := s.checkCreate(b); msg != "" {
		WriteError(w, http.StatusBadRequest, "%s", msg)
		return
	}
	timeout := int64(300)
	if b.Timeout != nil {
		timeout = *b.Timeout
	}
	now := time.Now().UTC()
	sb := &Sandbox{ID: randomID(20), Token: randomID(32), TemplateID: b.TemplateID, Runtime: b.Runtime,
		Metadata: b.Metadata, EnvVars: b.EnvVars, StartedAt: now, EndAt: now.Add(time.Duration(timeout) * time.Second)}
	s.Add(sb)
	writeJSON(w, http.StatusCreated, sandboxJSON(sb))
}

func (s *Server) checkCreate(b createBody) string {
	switch {
	case !slices.Contains(s.Templates, b.TemplateID):
		return "unknown template " + strconv.Quote(b.TemplateID)
	case b.Runtime != "" && !slices.Contains([]string{"runsc", "crun", "runc"}, b.Runtime):
		return "unknown runtime " + strconv.Quote(b.Runtime)
	case b.Timeout != nil && (*b.Timeout < 0 || *b.Timeout > 86400):
		return "timeout must be 0-86400 seconds"
	}
	return ""
}

func sandboxJSON(sb *Sandbox) map[string]any {
	return map[string]any{"sandboxID": sb.ID, "templateID": sb.TemplateID, "clientID": "sbx",
		"envdVersion": "0.6.4", "envdAccessToken": sb.Token, "domain": nil, "trafficAccessToken": nil}
}

func listedJSON(sb *Sandbox) map[string]any {
	return map[string]any{"sandboxID": sb.ID, "templateID": sb.TemplateID, "clientID": "sbx",
		"cpuCount": 2, "memoryMB": 512, "diskSizeMB": 1024, "envdVersion": "0.6.4",
		"startedAt": sb.StartedAt, "endAt": sb.EndAt, "state": "running", "metadata": sb.Metadata,
		"runtime": sb.Runtime}
}

// withSandbox resolves {id}, answering 404 for unknown sandboxes.
func (s *Server) withSandbox(fn func(http.ResponseWriter, *http.Request, *Sandbox)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sb := s.lookup(r.PathValue("id"))
		if sb == nil {
			WriteError(w, http.StatusNotFound, "sandbox %q not found", r.PathValue("id"))
			return
		}
		fn(w, r, sb)
	}
}

func (s *Server) get(w http.ResponseWriter, _ *http.Request, sb *Sandbox) {
	d := listedJSON(sb)
	d["envdAccessToken"], d["domain"] = sb.Token, nil
	d["lifecycle"] = map[string]any{"onTimeout": "kill", "autoResume": false}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) kill(w http.ResponseWriter, _ *http.Request, sb *Sandbox) {
	s.mu.Lock()
	s.sandboxes = slices.DeleteFunc(s.sandboxes, func(x *Sandbox) bool { return x == sb })
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) timeout(w http.ResponseWriter, r *http.Request, sb *Sandbox) {
	var b struct{ Timeout *int64 }
	if json.NewDecoder(r.Body).Decode(&b) != nil || b.Timeout == nil || *b.Timeout <= 0 {
		WriteError(w, http.StatusBadRequest, "timeout (seconds > 0) is required")
		return
	}
	s.mu.Lock()
	sb.EndAt = time.Now().UTC().Add(time.Duration(*b.Timeout) * time.Second)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) connect(w http.ResponseWriter, _ *http.Request, sb *Sandbox) {
	writeJSON(w, http.StatusOK, sandboxJSON(sb))
}

func (s *Server) metrics(w http.ResponseWriter, _ *http.Request, _ *Sandbox) {
	now := time.Now().UTC().Truncate(time.Second)
	writeJSON(w, http.StatusOK, []map[string]any{{"timestamp": now, "timestampUnix": now.Unix(),
		"cpuCount": 2, "cpuUsedPct": 12.5, "memUsed": 1 << 20, "memTotal": 512 << 20, "diskUsed": 4096, "diskTotal": 1 << 30}})
}

func (s *Server) templates(w http.ResponseWriter, _ *http.Request) {
	out := []map[string]any{}
	for _, t := range s.Templates {
		out = append(out, map[string]any{"templateID": t, "buildID": t, "aliases": []string{t}, "public": true,
			"envdVersion": "0.6.4", "buildStatus": "ready"})
	}
	writeJSON(w, http.StatusOK, out)
}

// ParseMetadataFilter decodes the SDK's double-encoded metadata filter (the
// query-decoded parameter is a query string whose parts are encoded again).
func ParseMetadataFilter(v string) (map[string]string, error) {
	pairs, err := url.ParseQuery(v)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, vs := range pairs {
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(vs[len(vs)-1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad encoding of metadata key %q", k)
		}
		out[key] = val
	}
	return out, nil
}

func randomID(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
