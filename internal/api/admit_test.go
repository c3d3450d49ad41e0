package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestAdmitSharesTheAPILimit: what the daemon serves beside the API with an
// API key (/mcp) is held to the API's rate limits through Admit: a team key
// past its bucket gets 429 {code, message}, and that bucket is the one its
// API calls draw on (a flood of /mcp leaves its API calls 429 too, and
// another team untouched); the admin key is not limited; unknown keys get
// 401, then 429 per address. Before, /mcp only checked the key (Authenticate):
// any number of requests a second per key.
func TestAdmitSharesTheAPILimit(t *testing.T) {
	a, _ := newAPI(t, nil)
	st := openStore(t)
	ctx := context.Background()
	tn, err := api.LoadTenants(ctx, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, team := range []string{"team_a", "team_b"} {
		if err := tn.PutTeam(ctx, &store.Team{ID: team, Name: team}); err != nil {
			t.Fatal(err)
		}
		if keys[team], _, err = tn.CreateKey(ctx, team, "k", ""); err != nil {
			t.Fatal(err)
		}
	}
	a.SetTenants(tn)
	a.SetTeamRate(5, 20)
	a.FreezeLimits()
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if team, ok := a.Admit(w, r, r.Header.Get("X-API-Key")); ok && team != "" {
			w.WriteHeader(http.StatusOK)
		}
	})
	mux.Handle("/", a)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	const n = 300
	counts := flood(t, srv.URL+"/mcp", keys["team_a"], n)
	if counts[http.StatusOK] != 20 || counts[http.StatusTooManyRequests] != n-counts[http.StatusOK] {
		t.Fatalf("team /mcp flood answers %v, want 20 OK (the burst) and the rest 429", counts)
	}
	if c := flood(t, srv.URL+"/sandboxes", keys["team_a"], 1); c[http.StatusTooManyRequests] != 1 {
		t.Fatalf("the flooding team's API call: %v, want 429 (one bucket)", c)
	}
	if c := flood(t, srv.URL+"/mcp", keys["team_b"], 1); c[http.StatusOK] != 1 {
		t.Fatalf("another team's /mcp request during the flood: %v", c)
	}
	if c := flood(t, srv.URL+"/mcp", testKey, n); c[http.StatusOK] != n {
		t.Fatalf("admin /mcp requests: %v, want all OK", c)
	}
	unauth := flood(t, srv.URL+"/mcp", "e2b_wrong", n)
	if unauth[http.StatusUnauthorized] != 100 || unauth[http.StatusTooManyRequests] != n-unauth[http.StatusUnauthorized] {
		t.Fatalf("unauthenticated /mcp flood answers %v, want 100 401s (the burst) and the rest 429", unauth)
	}
}
