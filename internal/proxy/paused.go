package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// pausedError is E2B's answer to traffic for a paused sandbox that does
// not resume on traffic (its proxy's sandbox_paused error, status 409).
type pausedError struct {
	SandboxID     string `json:"sandboxId"`
	Message       string `json:"message"`
	Code          int    `json:"code"`
	CanAutoResume bool   `json:"canAutoResume"`
}

// resume handles traffic for a paused sandbox: with autoResume the request
// waits for the resume and then proceeds; otherwise it is answered 409 like
// E2B. On error the response is written.
func (p *Proxy) resume(w http.ResponseWriter, r *http.Request, in sandbox.Info) (sandbox.Info, error) {
	if !in.Persist.AutoResume {
		if r.Method == http.MethodGet && path.Clean("/"+r.URL.Path) == "/health" {
			// The SDK's isRunning() reads 502 as "not running"; E2B's 409
			// would make it throw for a paused sandbox.
			p.fail(w, http.StatusBadGateway, "sandbox is paused")
		} else {
			writePaused(w, in.ID)
		}
		return in, errPaused
	}
	// A client that gives up must not abort a resume half way (the next
	// request would only start it again): it runs to the end, bounded.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), resumeTimeout)
	defer cancel()
	out, err := p.sbx.AutoResume(ctx, in.ID)
	switch {
	case errors.Is(err, sandbox.ErrConflict):
		writePaused(w, in.ID)
	case errors.Is(err, sandbox.ErrNotFound):
		p.fail(w, http.StatusBadGateway, "sandbox is not running")
	case err != nil:
		p.log.Warn("auto-resume failed", "sandbox", in.ID, "err", err)
		p.fail(w, http.StatusBadGateway, "sandbox could not be resumed: "+err.Error())
	}
	return out, err
}

var errPaused = errors.New("sandbox is paused")

// resumeTimeout bounds an auto-resume.
const resumeTimeout = time.Minute

func writePaused(w http.ResponseWriter, id string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusConflict)
	_ = json.NewEncoder(w).Encode(pausedError{SandboxID: id, Message: "The sandbox is paused", Code: http.StatusConflict})
}
