package integration

import (
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// TestClusterKeysPropagate (crun): a team created and a key revoked
// through one node of a cluster take effect on the other within seconds
// (its reload of teams and keys, every 2 s). Before, a node read them once
// at start: the new team's key was 401 on node2, and the key revoked
// through node1 went on working on node2 until it restarted, whose flush
// of the key's last use then stored the key again, for good.
func TestClusterKeysPropagate(t *testing.T) {
	requirements(t, "crun")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	n1 := startClusterNode(t, "crun", url, 1, "")
	n2 := startClusterNode(t, "crun", url, 2, "")
	waitNodes(t, admin, map[string]string{"node1": "live", "node2": "live"})
	tm := n1.newTeam("cluster-keys", nil)
	status := func(key string) int {
		code, _, _ := n2.call("GET", "/v2/sandboxes", map[string]string{"X-API-Key": key}, nil)
		return code
	}
	within := func(what string, want int, key string) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); status(key) != want; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: node2 still answers %d, want %d, after 10 s", what, status(key), want)
			}
		}
	}
	within("a team created through node1", 200, tm.Key)
	var k struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if code := n1.as(tm.Key, "POST", "/api-keys", map[string]any{"name": "doomed"}, &k); code != 201 || k.Key == "" {
		t.Fatalf("create key: %d", code)
	}
	within("a key created through node1", 200, k.Key)
	if code := n1.as(tm.Key, "DELETE", "/api-keys/"+k.ID, nil, nil); code != 204 {
		t.Fatalf("revoke: %d", code)
	}
	within("a key revoked through node1", 401, k.Key)
	keys, err := admin.APIKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range keys {
		if r.ID == k.ID {
			t.Fatalf("the revoked key is in the store again: %+v", r)
		}
	}
}
