package daemon

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/sbx-dev/sbx/internal/cluster"
)

// TestSelfTransportPassesGuard: with the cluster secret, the daemon's own
// clients (/mcp's tools, the dashboard's files) reach its guarded listener
// (signed for this node); a request signed for another node, or not at all,
// is still refused. Before, /mcp's tool calls all got 401 on such a node.
func TestSelfTransportPassesGuard(t *testing.T) {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("a-unit-test-cluster-secret-of-at-least-32-bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := cluster.LoadSigner(p)
	if err != nil {
		t.Fatal(err)
	}
	c := &clusterFlags{nodeID: "n1", signer: s}
	srv := httptest.NewServer(c.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(cluster.AuthHeader) != "" {
			t.Error("the signature reached the handler")
		}
	})))
	defer srv.Close()
	other := &clusterFlags{nodeID: "n2", signer: s}
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
		want int
	}{{"self", c.selfTransport(), 200}, {"signed for another node", other.selfTransport(), 401}, {"unsigned", (&clusterFlags{}).selfTransport(), 401}} {
		resp, err := (&http.Client{Transport: tc.rt}).Get(srv.URL + "/sandboxes?x=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}
