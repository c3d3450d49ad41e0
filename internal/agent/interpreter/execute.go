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

// lineWait is how long a line may wait for the next ones before it is
// flushed: a quick cell's count, result and end leave in one write, and
// streamed output is at most this late.
var lineWait = 5 * time.Millisecond

// stream writes the lines of out as NDJSON with a keepalive after every
// quiet keepaliveEvery, then end_of_execution. A line is flushed at most
// lineWait after it came (with whatever came meanwhile), the headers with
// the first lines or after headerWait, and the last lines go with the
// response's end: a cell that ends within lineWait is one write in all. It
// drains out even after the client left.
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
	due := time.NewTimer(headerWait) // flush what is written (at first: the headers)
	defer due.Stop()
	held := false // lines written since the last flush; due is set for them
	flush := func() {
		due.Stop()
		held = false
		if ok {
			ok = rc.Flush() == nil
		}
	}
	tick := time.NewTicker(keepaliveEvery)
	defer tick.Stop()
	for {
		select {
		case l, more := <-out:
			if !more {
				write(endLine) // net/http sends what is buffered with the end of the response
				return
			}
			write(l)
			if !held {
				held = true
				due.Reset(lineWait)
			}
			tick.Reset(keepaliveEvery)
		case <-due.C:
			flush()
		case <-tick.C:
			write(keepaliveLine)
			flush()
		}
	}
}
