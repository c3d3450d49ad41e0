package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestTeamsRouteTable: team B, holding team A's ids, gets from EVERY route
// of the daemon's router (GET /sbx/routes: the router's own list, so a new
// route is in this table the day it is added) exactly the answer it gets
// for ids that never existed: same status, same body (with the id echoed),
// same headers that matter. Routes without ids must not show A's records.
// Afterwards A's records are all still there.
func TestTeamsRouteTable(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	unmountVolumesAtEnd(t, d)
	a, b := d.newTeam("team-a", nil), d.newTeam("team-b", nil)
	ha, hb := map[string]string{"X-API-Key": a.Key}, map[string]string{"X-API-Key": b.Key}

	sbA := d.createAs(a.Key, nil)
	var volA, volB volumeRef
	var snapA struct {
		ID string `json:"snapshotID"`
	}
	var tplA, tplB struct {
		TemplateID string `json:"templateID"`
		BuildID    string `json:"buildID"`
	}
	var keyA2 struct {
		ID string `json:"id"`
	}
	var secA struct {
		ID string `json:"secretID"`
	}
	for _, c := range []struct {
		key, method, path string
		body              any
		out               any
	}{
		{a.Key, "POST", "/volumes", map[string]any{"name": "vol-a", "sizeMB": 16}, &volA},
		{b.Key, "POST", "/volumes", map[string]any{"name": "vol-b", "sizeMB": 16}, &volB},
		{a.Key, "POST", "/sandboxes/" + sbA.ID + "/snapshots", map[string]any{"name": "snap-a"}, &snapA},
		{a.Key, "POST", "/v3/templates", map[string]any{"name": "tpl-a"}, &tplA},
		{b.Key, "POST", "/v3/templates", map[string]any{"name": "tpl-b"}, &tplB},
		{a.Key, "POST", "/api-keys", map[string]any{"name": "second"}, &keyA2},
		{a.Key, "POST", "/secrets", map[string]any{"name": "sec-a", "value": "team-a-secret-value"}, &secA},
	} {
		if code := d.as(c.key, c.method, c.path, c.body, c.out); code/100 != 2 {
			t.Fatalf("setup %s %s: %d", c.method, c.path, code)
		}
	}
	defer d.call("DELETE", "/templates/"+snapA.ID, ha, nil)
	hash := strings.Repeat("ab", 32)
	// theirs and none give each wildcard A's id and an id that never was.
	theirs := map[string]string{"id": sbA.ID, "template": tplA.TemplateID, "build": tplA.BuildID, "hash": hash,
		"vid": volA.ID, "apiKeyID": keyA2.ID, "teamID": a.ID, "a": tplA.TemplateID, "b": "tags", "secretID": secA.ID}
	none := map[string]string{"id": "zzzzzzzzzzzzzzzzzzzz", "template": "nosuchtemplate", "build": "00000000-0000-4000-8000-000000000000",
		"hash": hash, "vid": "nosuchvolume", "apiKeyID": "00000000-0000-4000-8000-000000000001", "teamID": "team_0000000000000000",
		"a": "nosuchtemplate", "b": "tags", "secretID": "sec_000000000000000000000000"}
	// Other values for the same wildcards: A's snapshot where a template
	// may be named, A's alias, A's build under B's own template.
	// A variant applies to the routes that have all its wildcards.
	variants := []map[string]string{
		{"template": "snap-a"},
		{"a": "aliases", "b": "tpl-a"},
		{"template": snapA.ID},
		{"template": tplB.TemplateID, "build": tplA.BuildID},
		{"template": "tpl-a"},
		{"secretID": "sec-a"},
	}
	noneVariants := []map[string]string{
		{"template": "nosuchsnap"},
		{"a": "aliases", "b": "nosuchalias"},
		{"template": "snapnosuchsnapshot00"},
		{"template": tplB.TemplateID, "build": none["build"]},
		{"template": "nosuchtemplate"},
		{"secretID": "nosuchsecret"},
	}
	// Body fields that name records, for routes whose path has none.
	bodies := map[string][]bodyProbe{
		"POST /v2/sandboxes": createBodies(),
		"POST /sandboxes":    createBodies(),
		"POST /templates/tags": {{map[string]any{"target": "tpl-a", "tags": []string{"x"}},
			map[string]any{"target": "nosuchtemplate", "tags": []string{"x"}}, "tpl-a", "nosuchtemplate"}},
		"DELETE /templates/tags": {{map[string]any{"name": "tpl-a", "tags": []string{"latest"}},
			map[string]any{"name": "nosuchtemplate", "tags": []string{"latest"}}, "tpl-a", "nosuchtemplate"}},
		"POST /sbx/teams":          {{map[string]any{"name": "x"}, map[string]any{"name": "x"}, "", ""}},
		"POST /secrets/{secretID}": {{map[string]any{"value": "b-writes"}, map[string]any{"value": "b-writes"}, "", ""}},
	}
	// Routes that take no id at all and create the caller's own records.
	exempt := map[string]string{
		"POST /volumes":      "volume names are per team: B gets its own vol-a (checked below)",
		"POST /api-keys":     "mints a key of the caller's own team",
		"POST /v3/templates": "template names are per team: B gets its own tpl-a (checked below)",
		"POST /secrets":      "secret names are per team: B may have its own sec-a",
	}
	var routes struct{ APIKey, Other []string }
	if code := d.as(apiKey, "GET", "/sbx/routes", nil, &routes); code != 200 || len(routes.APIKey) < 30 {
		t.Fatalf("routes: %d %v", code, routes)
	}
	ids := []string{sbA.ID, volA.ID, snapA.ID, tplA.TemplateID, tplA.BuildID, keyA2.ID, a.ID, "tpl-a", "snap-a", "vol-a", secA.ID, "sec-a"}
	checked := 0
	probe := func(route string, hdr map[string]string, th, no map[string]string, bp bodyProbe) {
		t.Helper()
		method, path, _ := strings.Cut(route, " ")
		p1, p2 := fill(t, path, th), fill(t, path, no)
		c1, h1, b1 := d.call(method, p1, hdr, bp.theirs)
		c2, h2, b2 := d.call(method, p2, hdr, bp.none)
		got := string(b1)
		for k, v := range th {
			if v != no[k] && strings.Contains(path, "{"+k+"}") {
				got = strings.ReplaceAll(got, v, no[k])
			}
		}
		if bp.from != "" {
			got = strings.ReplaceAll(got, bp.from, bp.to)
		}
		// Without ids in the path or body, both requests are the same one:
		// only the status must match (a list may change in between).
		same := p1 == p2 && bp.from == ""
		if c1 != c2 || !same && got != string(b2) || h1.Get("Retry-After") != h2.Get("Retry-After") || h1.Get("Content-Type") != h2.Get("Content-Type") {
			t.Errorf("%s: another team's ids give %d %s; unknown ids give %d %s", route, c1, b1, c2, b2)
		}
		if c1/100 == 2 && (p1 != p2 || bp.from != "") {
			t.Errorf("%s with A's ids succeeded for B: %d %s", route, c1, b1)
		}
		for _, id := range ids {
			if strings.Contains(string(b1), id) && !strings.Contains(p1, id) && !bodyNames(bp.theirs, id) {
				t.Errorf("%s: B's answer shows A's %q: %s", route, id, b1)
			}
		}
		checked++
	}
	withVariants := func(route string, hdr map[string]string, fn func(th, no map[string]string)) {
		fn(theirs, none)
		for i, v := range variants {
			if strings.Contains(route, "{") && touches(route, v) {
				fn(merge(theirs, v), merge(none, noneVariants[i]))
			}
		}
	}
	for _, route := range routes.APIKey {
		_, path, _ := strings.Cut(route, " ")
		switch {
		case bodies[route] != nil:
			for _, bb := range bodies[route] {
				probe(route, hb, theirs, none, bb)
			}
		case exempt[route] != "":
			t.Logf("%s: %s", route, exempt[route])
		case !strings.Contains(path, "{") && !strings.HasPrefix(route, "GET "):
			t.Errorf("%s takes no id in its path: add its id-bearing body fields to bodies, or a reason to exempt", route)
		default:
			withVariants(route, hb, func(th, no map[string]string) {
				probe(route, hb, th, no, bodyProbe{theirs: map[string]any{}, none: map[string]any{}})
			})
		}
	}
	for _, route := range routes.Other {
		// B authenticates with what it holds: its own volume's token.
		h := map[string]string{"Authorization": "Bearer " + volB.Token}
		withVariants(route, h, func(th, no map[string]string) { probe(route, h, th, no, bodyProbe{}) })
	}
	t.Logf("%d probes over %d API-key routes and %d others", checked, len(routes.APIKey), len(routes.Other))

	// Query ids: the bulk metrics of A's sandbox are absent for B, as an
	// unknown sandbox's.
	_, _, m1 := d.call("GET", "/sandboxes/metrics?sandbox_ids="+sbA.ID, hb, nil)
	_, _, m2 := d.call("GET", "/sandboxes/metrics?sandbox_ids="+none["id"], hb, nil)
	if string(m1) != string(m2) {
		t.Errorf("bulk metrics: A's id gives %s, an unknown one %s", m1, m2)
	}
	// A's private template by its namespaced name ("<A's slug>/tpl-a") is
	// for B what a name A never had is.
	namespacedHidden(t, d, hb, a.ID)
	// B's own template under A's name is B's, another template (names are
	// per team, as E2B's); A's tpl-a stays A's. B's own volume named like
	// A's is B's, a different volume.
	var tplB2 struct {
		TemplateID string `json:"templateID"`
	}
	if code := d.as(b.Key, "POST", "/v3/templates", map[string]any{"name": "tpl-a"}, &tplB2); code != 202 || tplB2.TemplateID == tplA.TemplateID {
		t.Errorf("B requests tpl-a: %d %+v, want 202 and its own template", code, tplB2)
	}
	for _, c := range []struct {
		h    map[string]string
		want string
	}{{ha, tplA.TemplateID}, {hb, tplB2.TemplateID}} {
		var al struct {
			TemplateID string `json:"templateID"`
		}
		if code := d.as(c.h["X-API-Key"], "GET", "/templates/aliases/tpl-a", nil, &al); code != 200 || al.TemplateID != c.want {
			t.Errorf("alias tpl-a: %d %s, want %s", code, al.TemplateID, c.want)
		}
	}
	var volB2 volumeRef
	if code := d.as(b.Key, "POST", "/volumes", map[string]any{"name": "vol-a", "sizeMB": 16}, &volB2); code != 201 || volB2.ID == volA.ID {
		t.Errorf("B's vol-a: %d %+v", code, volB2)
	}
	// A's records all survived B's attempts.
	for _, p := range []string{"/sandboxes/" + sbA.ID, "/volumes/" + volA.ID, "/templates/" + tplA.TemplateID, "/secrets/" + secA.ID} {
		if code, _, body := d.call("GET", p, ha, nil); code != 200 {
			t.Errorf("A GET %s after B's probes: %d %s", p, code, body)
		}
	}
	var snaps []map[string]any
	if d.as(a.Key, "GET", "/snapshots", nil, &snaps); len(snaps) != 1 {
		t.Errorf("A's snapshots after B's probes: %v", snaps)
	}
	var keys []map[string]any
	if d.as(a.Key, "GET", "/api-keys", nil, &keys); len(keys) != 2 {
		t.Errorf("A's keys after B's probes: %v", keys)
	}
	// A's volume token still opens A's volume.
	if code, _ := d.content(volA, "GET", "/dir?path=/", ""); code != 200 {
		t.Errorf("A's volume content: %d", code)
	}
	// The history (logs, metrics) outlives the sandbox: its team's alone.
	d.call("DELETE", "/sandboxes/"+sbA.ID, ha, nil)
	for _, p := range []string{"/v2/sandboxes/%s/logs", "/sandboxes/%s/logs", "/sandboxes/%s/metrics"} {
		if code, _, body := d.call("GET", fmt.Sprintf(p, sbA.ID), ha, nil); code != 200 {
			t.Errorf("A reads its killed sandbox's %s: %d %s", p, code, body)
		}
		c1, _, b1 := d.call("GET", fmt.Sprintf(p, sbA.ID), hb, nil)
		c2, _, b2 := d.call("GET", fmt.Sprintf(p, none["id"]), hb, nil)
		if c1 != 404 || c1 != c2 || strings.ReplaceAll(string(b1), sbA.ID, none["id"]) != string(b2) {
			t.Errorf("B reads A's killed sandbox's %s: %d %s; unknown: %d %s", p, c1, b1, c2, b2)
		}
	}
	for _, v := range []struct {
		h  map[string]string
		id string
	}{{ha, volA.ID}, {hb, volB.ID}, {hb, volB2.ID}} {
		if code, _, body := d.call("DELETE", "/volumes/"+v.id, v.h, nil); code != 204 {
			t.Errorf("delete volume %s: %d %s", v.id, code, body)
		}
	}
}

// bodyProbe is a request body naming A's record and the same body naming
// one that never existed; from/to map the one name to the other in the
// answer (which may echo it).
type bodyProbe struct {
	theirs, none any
	from, to     string
}

// createBodies are create requests naming A's template, A's snapshot and
// A's volume.
func createBodies() []bodyProbe {
	mount := func(n string) any {
		return map[string]any{"templateID": "base", "volumeMounts": []any{map[string]any{"name": n, "path": "/mnt/v"}}}
	}
	return []bodyProbe{
		{map[string]any{"templateID": "tpl-a"}, map[string]any{"templateID": "nosuchtemplate"}, "tpl-a", "nosuchtemplate"},
		{map[string]any{"templateID": "snap-a"}, map[string]any{"templateID": "nosuchtemplate"}, "snap-a", "nosuchtemplate"},
		{mount("vol-a"), mount("nosuchvolume"), "vol-a", "nosuchvolume"},
	}
}

// bodyNames reports whether the request body b names id (the answer may
// echo it, as for an unknown name).
func bodyNames(b any, id string) bool {
	j, _ := json.Marshal(b)
	return strings.Contains(string(j), id)
}

func touches(route string, v map[string]string) bool {
	for k := range v {
		if !strings.Contains(route, "{"+k+"}") {
			return false
		}
	}
	return true
}

func merge(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// namespacedHidden: B (hb) asking for team ns's private "tpl-a" as
// "<ns>/tpl-a" (escaped as the SDK sends it) gets exactly what it gets for
// "<ns>/nosuchtemplate", on every template route and in a create.
func namespacedHidden(t *testing.T, d *daemon, hb map[string]string, ns string) {
	t.Helper()
	theirs, none := ns+"/tpl-a", ns+"/nosuchtemplate"
	esc := func(s string) string { return strings.ReplaceAll(s, "/", "%2F") }
	for _, r := range []struct{ method, path string }{{"GET", "/templates/aliases/%s"}, {"GET", "/templates/%s"},
		{"PATCH", "/templates/%s"}, {"DELETE", "/templates/%s"}, {"GET", "/templates/%s/tags"}, {"POST", "/v2/sandboxes"}} {
		var b1, b2 any = map[string]any{"public": true}, map[string]any{"public": true}
		if r.method == "POST" {
			b1, b2 = map[string]any{"templateID": theirs}, map[string]any{"templateID": none}
		}
		c1, _, a1 := d.call(r.method, strings.ReplaceAll(r.path, "%s", esc(theirs)), hb, b1)
		c2, _, a2 := d.call(r.method, strings.ReplaceAll(r.path, "%s", esc(none)), hb, b2)
		if c1 != 404 || c1 != c2 || strings.ReplaceAll(string(a1), theirs, none) != string(a2) {
			t.Errorf("B %s %s with %s: %d %s; with %s: %d %s", r.method, r.path, theirs, c1, a1, none, c2, a2)
		}
	}
}
