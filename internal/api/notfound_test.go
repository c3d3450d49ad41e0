package api_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/sbx-dev/sbx/internal/api"
)

// TestNotFoundWording: a team or API key that does not exist is a 404 that
// names it, not "sandbox not found: team ..." (ErrNotFound's own text).
func TestNotFoundWording(t *testing.T) {
	a, _ := newAPI(t, nil)
	tn, err := api.LoadTenants(context.Background(), openStore(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a.SetTenants(tn)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	for path, want := range map[string]string{
		"/sbx/teams/nope": `team "nope" not found`,
		"/api-keys/nope":  `API key "nope" not found`,
	} {
		code, body := do(t, srv, "DELETE", path, "", nil)
		if code != 404 || body["message"] != want {
			t.Errorf("DELETE %s = %d %v, want 404 %q", path, code, body, want)
		}
	}
}
