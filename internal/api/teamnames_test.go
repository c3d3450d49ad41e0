package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestTeamNames: a team's name is 1-64 characters of [a-z0-9._-] (400
// naming the rule otherwise) and unique (409, also against the default
// team's "default"), on create and rename; a team stored before the rule,
// with a name outside it, still lists and takes changes that keep its name.
func TestTeamNames(t *testing.T) {
	a, _ := newAPI(t, nil)
	st := openStore(t)
	if err := st.PutTeam(context.Background(), &store.Team{ID: "team_old", Name: "Old Team!"}); err != nil {
		t.Fatal(err)
	}
	tn, err := api.LoadTenants(context.Background(), st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a.SetTenants(tn)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	code, acme := do(t, srv, "POST", "/sbx/teams", `{"name":"acme"}`, nil)
	if code != 201 {
		t.Fatalf("create acme: %d %v", code, acme)
	}
	_, other := do(t, srv, "POST", "/sbx/teams", `{"name":"other.team_2-b"}`, nil)
	for _, tt := range []struct {
		method, path, name string
		code               int
		msg                string
	}{
		{"POST", "/sbx/teams", "acme", 409, `team name "acme" is taken`},
		{"POST", "/sbx/teams", "default", 409, `team name "default" is taken`},
		{"POST", "/sbx/teams", "bad name!", 400, "[a-z0-9._-]"},
		{"POST", "/sbx/teams", "Acme", 400, "[a-z0-9._-]"},
		{"POST", "/sbx/teams", "", 400, "1-64"},
		{"POST", "/sbx/teams", "-x", 400, "letter or digit"},
		{"POST", "/sbx/teams", strings.Repeat("a", 65), 400, "1-64"},
		{"PATCH", "/sbx/teams/" + other["teamID"].(string), "acme", 409, "taken"},
		{"PATCH", "/sbx/teams/" + other["teamID"].(string), "a b", 400, "[a-z0-9._-]"},
		{"PATCH", "/sbx/teams/" + acme["teamID"].(string), "acme", 200, ""},
		{"PATCH", "/sbx/teams/team_old", "old-team", 200, ""},
		{"POST", "/sbx/teams", strings.Repeat("a", 64), 201, ""},
	} {
		code, body := do(t, srv, tt.method, tt.path, fmt.Sprintf(`{"name":%q}`, tt.name), nil)
		msg, _ := body["message"].(string)
		if code != tt.code || !strings.Contains(msg, tt.msg) || code >= 400 && body["code"] != float64(code) {
			t.Errorf("%s %s %q = %d %v; want %d %q", tt.method, tt.path, tt.name, code, body, tt.code, tt.msg)
		}
	}
}

// TestTeamLegacyName: a stored name outside the rule keeps working: the
// team's quota can change without renaming it.
func TestTeamLegacyName(t *testing.T) {
	a, _ := newAPI(t, nil)
	st := openStore(t)
	for _, tm := range []*store.Team{{ID: "team_x", Name: "Dup Name"}, {ID: "team_y", Name: "Dup Name"}} {
		if err := st.PutTeam(context.Background(), tm); err != nil {
			t.Fatal(err)
		}
	}
	tn, err := api.LoadTenants(context.Background(), st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a.SetTenants(tn)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	for _, body := range []string{`{"quota":{"sandboxes":3}}`, `{"name":"Dup Name","quota":{"sandboxes":4}}`} {
		if code, out := do(t, srv, "PATCH", "/sbx/teams/team_y", body, nil); code != 200 || out["name"] != "Dup Name" {
			t.Errorf("PATCH %s = %d %v", body, code, out)
		}
	}
}
