package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestVolumeContentRateLimited: the volume content API is served beside
// the API without an API key, and every call of it is audited. A volume's
// token draws on its team's API bucket and a token that opens nothing on
// its address's, as keys do (429 {code, message} with Retry-After past
// them, the refusals not audited one by one), and each admitted call's
// audit record names the volume's team. Before, neither was limited (a
// client without any key wrote 14 MB of audit log in 10 s through 401s
// here) and every record named the default team, whoever's volume it was.
func TestVolumeContentRateLimited(t *testing.T) {
	aud := &memAudit{}
	srv, a := newVolumeAPI(t, aud)
	ctx := context.Background()
	tn, err := api.LoadTenants(ctx, openStore(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.PutTeam(ctx, &store.Team{ID: "team_a", Name: "team_a"}); err != nil {
		t.Fatal(err)
	}
	key, _, err := tn.CreateKey(ctx, "team_a", "k", "")
	if err != nil {
		t.Fatal(err)
	}
	a.SetTenants(tn)
	code, v := do(t, srv, "POST", "/volumes", `{"name":"shared"}`, map[string]string{"X-API-Key": key})
	if code != http.StatusCreated {
		t.Fatalf("create = %d %v", code, v)
	}
	a.SetTeamRate(5, 20)
	a.FreezeLimits()
	url := srv.URL + "/volumecontent/" + v["volumeID"].(string) + "/path?path=/"

	const n = 300
	tok := floodWith(t, url, "Authorization", "Bearer "+v["token"].(string), n)
	if tok[http.StatusOK] != 20 || tok[http.StatusTooManyRequests] != n-tok[http.StatusOK] {
		t.Fatalf("volume token flood answers %v, want 20 OK (the team's burst) and the rest 429", tok)
	}
	if c := flood(t, srv.URL+"/volumes", key, 1); c[http.StatusTooManyRequests] != 1 {
		t.Fatalf("the team's key after its volume token's flood: %v, want 429 (one bucket)", c)
	}
	bad := floodWith(t, url, "Authorization", "Bearer wrong", n)
	if bad[http.StatusUnauthorized] != 100 || bad[http.StatusTooManyRequests] != n-bad[http.StatusUnauthorized] {
		t.Fatalf("bad token flood answers %v, want 100 401s (the burst) and the rest 429", bad)
	}

	content, unauth := 0, 0
	aud.mu.Lock()
	defer aud.mu.Unlock()
	for _, r := range aud.recs {
		if r["kind"] != "api" || !strings.HasPrefix(r["path"], "/volumecontent/") {
			continue
		}
		switch r["status"] {
		case "200":
			content++
			if r["team"] != "team_a" {
				t.Fatalf("a content call of team_a's volume audited as team %q", r["team"])
			}
		case "401":
			unauth++
		}
	}
	if content != tok[http.StatusOK] || unauth != bad[http.StatusUnauthorized] {
		t.Fatalf("%d content and %d 401 records, want %d and %d (one per admitted request)",
			content, unauth, tok[http.StatusOK], bad[http.StatusUnauthorized])
	}
}

// TestUnroutedRateLimited: a request no route takes (404) and a refused
// upload link (403) are answered, and logged, within the caller's bucket of
// unauthenticated requests: past it 429 {code, message} with Retry-After,
// not logged one by one. Before, neither was limited: a client without a
// key wrote a log line for each, 1.1 MB of the daemon's log a second.
func TestUnroutedRateLimited(t *testing.T) {
	const n = 300
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/no/such/endpoint", http.StatusNotFound},
		{"/sbx/uploads/t/h?expires=1&signature=x", http.StatusForbidden},
	} {
		a, _ := newTemplateAPI(t) // with the builder: the upload route; its own buckets
		a.FreezeLimits()
		srv := httptest.NewServer(a)
		got := floodMethod(t, srv.URL+c.path, c.status, n)
		srv.Close()
		if got[c.status] != 100 || got[http.StatusTooManyRequests] != n-got[c.status] {
			t.Errorf("%s flood answers %v, want 100 %d (the burst) and the rest 429", c.path, got, c.status)
		}
	}
	a, _ := newTemplateAPI(t)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	if c := flood(t, srv.URL+"/no/such/endpoint", testKey, n); c[http.StatusNotFound] != n {
		t.Fatalf("an admin key's unrouted requests: %v, want all 404 (never limited)", c)
	}
}

// floodMethod sends n requests without a key to url (GET, or PUT for an
// upload link, whose refusal is status) and counts the answers.
func floodMethod(t *testing.T, url string, status, n int) map[int]int {
	t.Helper()
	method := http.MethodGet
	if status == http.StatusForbidden {
		method = http.MethodPut
	}
	out := map[int]int{}
	for range n {
		req, _ := http.NewRequest(method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		out[resp.StatusCode]++
	}
	return out
}
