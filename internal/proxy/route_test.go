package proxy

import (
	"net/http/httptest"
	"testing"

	"github.com/sbx-dev/sbx/internal/envdsig"
)

func TestRoute(t *testing.T) {
	const id = "abcdefghij0123456789"
	tests := []struct {
		name            string
		host, hid, port string
		domain          string
		want            Target
		ok, err         bool
	}{
		{name: "api", host: "127.0.0.1:3000"},
		{name: "header default port", host: "127.0.0.1:3000", hid: id, want: Target{ID: id, Port: EnvdPort}, ok: true},
		{name: "header code port", host: "localhost", hid: id, port: "49999", want: Target{ID: id, Port: CodePort}, ok: true},
		{name: "header bad id", host: "localhost", hid: "../etc", ok: true, err: true},
		{name: "header bad port", host: "localhost", hid: id, port: "0x10", ok: true, err: true},
		{name: "header port out of range", host: "localhost", hid: id, port: "70000", ok: true, err: true},
		{name: "header port leading zero", host: "localhost", hid: id, port: "080", ok: true, err: true},
		{name: "host", host: "8080-" + id + ".sbx.test:3000", domain: "sbx.test", want: Target{ID: id, Port: 8080, ByHost: true}, ok: true},
		{name: "host any domain", host: "8080-" + id + ".example.org", want: Target{ID: id, Port: 8080, ByHost: true}, ok: true},
		{name: "host wrong domain", host: "8080-" + id + ".evil.test", domain: "sbx.test"},
		{name: "host short id", host: "8080-abc.sbx.test", domain: "sbx.test"},
		{name: "host uppercase", host: "8080-" + "ABCDEFGHIJ0123456789" + ".sbx.test", domain: "sbx.test", want: Target{ID: id, Port: 8080, ByHost: true}, ok: true},
		{name: "host no port", host: id + ".sbx.test", domain: "sbx.test"},
		{name: "domain with port", host: "8080-" + id + ".sbx.test:8443", domain: "sbx.test:8443", want: Target{ID: id, Port: 8080, ByHost: true}, ok: true},
		{name: "domain with port, host without", host: "8080-" + id + ".sbx.test", domain: "sbx.test:8443", want: Target{ID: id, Port: 8080, ByHost: true}, ok: true},
		{name: "domain with port, wrong domain", host: "8080-" + id + ".evil.test:8443", domain: "sbx.test:8443"},
		{name: "api host of the domain", host: "api.sbx.test:8443", domain: "sbx.test:8443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/x", nil)
			r.Host = tt.host
			if tt.hid != "" {
				r.Header.Set("E2b-Sandbox-Id", tt.hid)
			}
			if tt.port != "" {
				r.Header.Set("E2b-Sandbox-Port", tt.port)
			}
			got, ok, err := Route(r, tt.domain)
			if ok != tt.ok || (err != nil) != tt.err {
				t.Fatalf("Route = %+v, %v, %v; want ok=%v err=%v", got, ok, err, tt.ok, tt.err)
			}
			if !tt.err && got != tt.want {
				t.Fatalf("Route = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzRouteHost(f *testing.F) {
	for _, s := range []string{"8080-abcdefghij0123456789.sbx.test", "1-a.b", "", "-.", "99999999999999999999-x.y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		tg, ok := RouteHost(host, "")
		if ok && (tg.Port < 1 || tg.Port > 65535 || len(tg.ID) != 20) {
			t.Fatalf("RouteHost(%q) = %+v", host, tg)
		}
	})
}

func FuzzSignatureRouting(f *testing.F) {
	f.Add("/home/user/a", "read", "", int64(1700000000), "v1_abc")
	f.Fuzz(func(t *testing.T, path, op, user string, exp int64, sig string) {
		good := envdsig.Sign(path, op, user, "tok", exp)
		if envdsig.Equal(sig, good) != (sig == good) {
			t.Fatal("Equal disagrees with equality")
		}
		if envdsig.Sign(path, op, user, "other", exp) == good {
			t.Fatal("signature does not bind the token")
		}
	})
}
