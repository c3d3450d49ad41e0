package api

import (
	"net/http"
	"sort"
)

// healthReport is the body of GET /health.
type healthReport struct {
	// Status is "ok", "degraded" (some runtime does not work: creates on it
	// get 503, the others work) or "unavailable" (the default runtime does
	// not work; answered with 503).
	Status string `json:"status"`
	// Runtimes is name → "ok", or the error for a caller with an admin
	// key and "error" for anyone else (the text may name host paths and
	// versions).
	Runtimes map[string]string `json:"runtimes"`
	// Degraded lists runtimes that worked at start and fail now.
	Degraded []string `json:"degraded,omitempty"`
	// Unavailable lists runtimes that could not be opened at start (e.g. not
	// installed): creates on them get 503, but the node is not degraded.
	Unavailable []string `json:"unavailable,omitempty"`
	// Pools is how many warm sandboxes each pool ("template:runtime") holds
	// ready now.
	Pools map[string]int `json:"pools,omitempty"`
}

// health answers GET /health (unauthenticated; probes are cached by the
// manager, so it cannot be used to fork runtime binaries at will). A
// failing runtime's error text is for admin keys only.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	rep := healthReport{Status: "ok", Runtimes: map[string]string{}}
	p, _ := s.principal(r.Header.Get("X-API-Key"))
	for name, err := range s.mgr.Health(r.Context()) {
		switch _, atStart := s.mgr.Config().Unavailable[name]; {
		case err == nil:
			rep.Runtimes[name] = "ok"
			continue
		case atStart:
			rep.Unavailable = append(rep.Unavailable, name)
		default:
			rep.Degraded = append(rep.Degraded, name)
			rep.Status = "degraded"
		}
		rep.Runtimes[name] = "error"
		if p.Admin {
			rep.Runtimes[name] = err.Error()
		}
	}
	for k, n := range s.mgr.PoolStats() {
		if rep.Pools == nil {
			rep.Pools = map[string]int{}
		}
		rep.Pools[k.Template+":"+k.Runtime] = n
	}
	sort.Strings(rep.Degraded)
	sort.Strings(rep.Unavailable)
	status := http.StatusOK
	if rep.Runtimes[s.mgr.Config().DefaultRuntime] != "ok" {
		rep.Status, status = "unavailable", http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "5")
	}
	writeJSON(w, status, rep)
}
