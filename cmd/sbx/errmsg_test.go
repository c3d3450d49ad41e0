package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/client/clienttest"
)

// runAt runs the CLI against url with key; it returns exit code and output.
func runAt(t *testing.T, url, key string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("SBX_URL", url)
	t.Setenv("SBX_API_KEY", key)
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, stdio{strings.NewReader(""), &out, &errOut})
	return code, out.String(), errOut.String()
}

// TestDaemonUnreachable: with no daemon at the URL every command says so and
// what to do, not a bare "dial tcp ...: connection refused".
func TestDaemonUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	for _, tt := range []struct {
		args []string
		code int
	}{{[]string{"ls"}, 1}, {[]string{"run", "true"}, exitInfra}, {[]string{"kill", "x"}, 1}, {[]string{"template", "ls"}, 1}} {
		code, _, errOut := runAt(t, url, testKey, tt.args...)
		if code != tt.code || !strings.Contains(errOut, "cannot reach the sbx daemon") || !strings.Contains(errOut, "SBX_URL") {
			t.Errorf("%v: exit %d, stderr %q; want %d and what to do", tt.args, code, errOut, tt.code)
		}
	}
}

// TestKeyRefused: a wrong API key is named as the problem, with the fix.
func TestKeyRefused(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	for _, args := range [][]string{{"ls"}, {"run", "true"}, {"inspect", "x"}} {
		code, _, errOut := runAt(t, srv.URL, "e2b_wrong", args...)
		if code == 0 || !strings.Contains(errOut, "refused the API key") || !strings.Contains(errOut, "SBX_API_KEY") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// TestExplainRPC: an envd error is its message, not the chain of codes
// ("run: unauthorized: unauthenticated: invalid username ...").
func TestExplainRPC(t *testing.T) {
	ce := connect.NewError(connect.CodeUnauthenticated, errors.New("invalid username: 'x'"))
	err := fmt.Errorf("run: %w: %w", client.ErrUnauthorized, ce)
	if got := explain(err); got != "invalid username: 'x'" {
		t.Errorf("explain = %q", got)
	}
	ae := fmt.Errorf("GET /x: %w", &client.APIError{Status: 409, Message: "busy"})
	if got := explain(ae); got != "409 Conflict: busy" {
		t.Errorf("explain = %q", got)
	}
}

// TestMCPChecksFlags: sbx mcp without a key (or with a bad URL) says so and
// exits 2 at once, not later as every tool call's error.
func TestMCPChecksFlags(t *testing.T) {
	for _, tt := range []struct{ url, key, want string }{
		{"http://127.0.0.1:3000", "", "no API key"}, {"localhost:3000", testKey, "want an origin"}} {
		code, _, errOut := runAt(t, tt.url, tt.key, "mcp")
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%+v: exit %d, stderr %q", tt, code, errOut)
		}
	}
}
