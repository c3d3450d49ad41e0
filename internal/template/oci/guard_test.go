package oci

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/egress"
)

// TestPullGuard: with a Guard a pull connects only where it allows — not
// to a loopback registry, nor to one a name or a redirect leads to — except
// to the registries the operator named (Insecure, Mirror); Open ranges are
// allowed. A refusal is ErrAddressNotAllowed and stores nothing.
func TestPullGuard(t *testing.T) {
	needRoot(t)
	f := newPullFixture(t)
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	// redirector is another registry whose blobs are sent to f's, by name.
	redirector := newRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/blobs/") {
				http.Redirect(w, r, "http://localhost:"+strings.Split(f.host, ":")[1]+r.URL.Path, http.StatusTemporaryRedirect)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	push(t, redirector+"/app:v1", f.app)
	push(t, f.host+"/library/python:3.12", f.app)
	cases := []struct {
		name string
		p    Puller
		ref  string
		ok   bool
	}{
		{"no guard", Puller{}, f.host + "/app:v1", true},
		{"loopback refused", Puller{Guard: &egress.Ranges{}}, f.host + "/app:v1", false},
		{"by name refused", Puller{Guard: &egress.Ranges{}}, "localhost:" + strings.Split(f.host, ":")[1] + "/app:v1", false},
		{"open range", Puller{Guard: &egress.Ranges{Open: loopback}}, f.host + "/app:v1", true},
		{"never beats open", Puller{Guard: &egress.Ranges{Open: loopback, Never: loopback}}, f.host + "/app:v1", false},
		{"operator's insecure registry", Puller{Guard: &egress.Ranges{}, Insecure: []string{f.host}}, f.host + "/app:v1", true},
		{"operator's mirror", Puller{Guard: &egress.Ranges{}, Mirror: f.host}, "python:3.12", true},
		{"redirect from an operator's registry refused", Puller{Guard: &egress.Ranges{}, Insecure: []string{redirector}}, redirector + "/app:v1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := newStore(t)
			c.p.Platform = "linux/amd64"
			_, err := c.p.Pull(context.Background(), c.ref, nil, store)
			switch {
			case c.ok && err != nil:
				t.Fatalf("Pull = %v, want success", err)
			case !c.ok && !errors.Is(err, ErrAddressNotAllowed):
				t.Fatalf("Pull = %v, want ErrAddressNotAllowed", err)
			case !c.ok && (store.total() != 0 || !strings.Contains(err.Error(), "--registry-open")):
				t.Fatalf("refused pull stored %d layers, error %q", store.total(), err)
			}
		})
	}
}
