package daemon

import (
	"net/http"

	"github.com/sbx-dev/sbx/internal/cluster"
)

// selfTransport is the transport of the daemon's own clients of its
// listener (/mcp's tools, the dashboard's files and terminals). A node
// given the cluster secret answers only signed requests (guard), so with a
// secret each request is signed for this node, as the front signs what it
// forwards; the signature never leaves the node (the guard takes it off
// before anything reaches a sandbox). The caller's key is still checked
// as for any request. Without a secret it is a plain pooled transport.
func (c *clusterFlags) selfTransport() http.RoundTripper {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if c.signer == nil {
		return base
	}
	return &signingTransport{base: base, sign: c.signer, node: c.nodeID}
}

// signingTransport signs each request for node before base sends it.
type signingTransport struct {
	base http.RoundTripper
	sign *cluster.Signer
	node string
}

func (t *signingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context()) // a RoundTripper must not modify its request
	t.sign.Sign(r, t.node)
	return t.base.RoundTrip(r)
}
