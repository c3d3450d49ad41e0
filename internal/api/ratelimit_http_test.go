package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestRateLimitBoundsAudit: every API call is audited, so a caller's
// request rate is a disk write rate. A team key past its bucket gets 429
// {code, message} with Retry-After, and its refusals are audited as one
// api.limited record a second, not one each; another team and the admin
// are untouched. Unauthenticated requests (audited 401s) are limited per
// remote address the same way. Before: 12,000 requests a second of one
// key, or of none, each wrote a record (5.7 MB of audit log a second).
func TestRateLimitBoundsAudit(t *testing.T) {
	aud := &memAudit{}
	a, _ := newAPIAudited(t, nil, aud)
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
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)

	const n = 300
	counts := flood(t, srv.URL+"/sandboxes", keys["team_a"], n)
	if counts[http.StatusOK] != 20 || counts[http.StatusTooManyRequests] != n-counts[http.StatusOK] {
		t.Fatalf("team flood answers %v, want 20 OK (the burst) and the rest 429", counts)
	}
	if c := flood(t, srv.URL+"/sandboxes", keys["team_b"], 1); c[http.StatusOK] != 1 {
		t.Fatalf("another team's request during the flood: %v", c)
	}
	if c := flood(t, srv.URL+"/sandboxes", testKey, n); c[http.StatusOK] != n {
		t.Fatalf("admin requests: %v, want all OK", c)
	}
	unauth := flood(t, srv.URL+"/sandboxes", "e2b_wrong", n)
	if unauth[http.StatusUnauthorized] != 100 || unauth[http.StatusTooManyRequests] != n-unauth[http.StatusUnauthorized] {
		t.Fatalf("unauthenticated flood answers %v, want 100 401s (the burst) and the rest 429", unauth)
	}

	apiRecs, limited, refused := 0, 0, 0
	aud.mu.Lock()
	for _, r := range aud.recs {
		switch r["kind"] {
		case "api":
			apiRecs++
		case "api.limited":
			limited++
			c, _ := strconv.Atoi(r["refused"])
			refused += c
		}
	}
	aud.mu.Unlock()
	want := counts[http.StatusOK] + 1 + n + unauth[http.StatusUnauthorized]
	if apiRecs != want {
		t.Fatalf("%d api records, want %d (one per admitted request)", apiRecs, want)
	}
	if limited < 2 || limited > 6 || refused < 2 {
		t.Fatalf("%d api.limited records reporting %d refusals, want 2-6 (at most one a second per caller)", limited, refused)
	}
}

// flood sends n GETs to url with key and counts the answers by status;
// every 429 must carry Retry-After and {code, message}.
func flood(t *testing.T, url, key string, n int) map[int]int {
	t.Helper()
	return floodWith(t, url, "X-API-Key", key, n)
}

// floodWith sends n GETs of url with header hdr: val and counts the answers.
func floodWith(t *testing.T, url, hdr, val string, n int) map[int]int {
	t.Helper()
	out := map[int]int{}
	for range n {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set(hdr, val)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && (resp.Header.Get("Retry-After") == "" || string(b) != `{"code":429,"message":"too many requests: slow down (rate limit)"}`+"\n") {
			t.Fatalf("429 without Retry-After or {code, message}: %q %q", resp.Header.Get("Retry-After"), b)
		}
	}
	return out
}
