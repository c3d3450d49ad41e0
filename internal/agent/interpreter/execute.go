package interpreter

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

type executeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// keepaliveEvery is how often a keepalive line is sent on a silent stream.
var keepaliveEvery = 5 * time.Second

func (s *Server) handleExecute(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.State.CheckToken(r.Header.Get("X-Access-Token")) {
		http.Error(w, "unauthorized: missing or wrong X-Access-Token", http.StatusUnauthorized)
		return
	}
	var req executeRequest
	err := decode(r, &req)
	var k *kcontext
	if err == nil {
		k, err = s.target(req)
	}
	if err == nil {
		err = validateEnv(k.Language, req.EnvVars)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	out := make(chan line, 256)
	go func() {
		defer close(out)
		k.execute(r.Context(), req.Code, req.EnvVars, out)
	}()
	stream(w, out)
}

// target picks the request's context: by id, else the language's default.
func (s *Server) target(req executeRequest) (*kcontext, error) {
	if req.ContextID != "" && req.Language != "" {
		return nil, fmt.Errorf("%w: context_id and language are mutually exclusive", errBadRequest)
	}
	if req.ContextID != "" {
		return s.lookup(req.ContextID)
	}
	return s.defaultContext(req.Language)
}

// headerWait is how long the response's headers may wait for the first
// lines, to leave with them in one write (under gVisor every write is a trip
// through the netstack and the daemon's proxy). The SDK's request timer
// stops at the headers, so they never wait longer than this: a context busy
// with another cell or a kernel still starting sends them on time.
var headerWait = 20 * time.Millisecond

// stream writes the lines of out as NDJSON with a keepalive after every
// quiet keepaliveEvery, then end_of_execution. The headers leave with the
// first lines or after headerWait, whichever comes first. Lines are flushed
// as soon as no other line is already waiting (a burst leaves in one write),
// and the last ones go with the response's end: a cell that ends within
// headerWait is one write in all. It drains out even after the client left.
func stream(w http.ResponseWriter, out <-chan line) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	ok := true
	write := func(l line) {
		if ok {
			ok = enc.Encode(l) == nil
		}
	}
	headers := time.NewTimer(headerWait)
	defer headers.Stop()
	flush := func() {
		headers.Stop()
		if ok {
			ok = rc.Flush() == nil
		}
	}
	tick := time.NewTicker(keepaliveEvery)
	defer tick.Stop()
	for {
		select {
		case l, more := <-out:
			for more {
				write(l)
				select {
				case l, more = <-out:
					continue
				default:
				}
				break
			}
			if !more {
				write(endLine) // net/http sends what is buffered with the end of the response
				return
			}
			flush()
			tick.Reset(keepaliveEvery)
		case <-headers.C:
			flush()
		case <-tick.C:
			write(keepaliveLine)
			flush()
		}
	}
}
