package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/reqid"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// TestInternalErrorNotAnswered: a 500's cause (the daemon's own failure,
// e.g. a snapshot's copy naming the host's data dir) is logged with the
// request id and not answered: the caller gets {code, message} naming the
// request id. Errors a sentinel maps keep their message. Before, a
// tenant whose sandbox held a tree too deep to copy read the data dir's
// paths in the answer to its pause or snapshot.
func TestInternalErrorNotAnswered(t *testing.T) {
	const secret = "/var/lib/sbx/run/sandboxes/abc/layer/upper"
	tests := []struct {
		name    string
		err     error
		status  int
		message string // the answer's message contains it
		logged  bool   // the error is in the log line
	}{
		{"internal", fmt.Errorf("save layer: copy %s: exit status 1", secret), 500, "internal error: the daemon's log has its cause under request id ", true},
		{"mapped", fmt.Errorf("%w: sandbox x", sandbox.ErrNotFound), 404, "sandbox x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/sandboxes/x/snapshots", nil)
			s.serveObserved(rec, req, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				writeErr(&statusWriter{ResponseWriter: w}, tt.err) // as behind auth
			}))
			var body apiError
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != tt.status || body.Code != tt.status {
				t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
			}
			id := rec.Header().Get(reqid.Header)
			if !strings.Contains(body.Message, tt.message) || tt.logged && (strings.Contains(body.Message, secret) || !strings.HasSuffix(body.Message, id)) {
				t.Fatalf("message %q (request id %s)", body.Message, id)
			}
			if line := logs.String(); tt.logged != strings.Contains(line, secret) {
				t.Fatalf("log line %q: cause logged %v, want %v", line, !tt.logged, tt.logged)
			}
		})
	}
}
