package daemon

import (
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

func TestParsePools(t *testing.T) {
	got, err := parsePools("base=2, code-interpreter-v1:crun=1,my-app@v2=3,my-app@prod:runc=0", "runsc")
	if err != nil {
		t.Fatal(err)
	}
	want := map[sandbox.PoolKey]int{
		{Template: "base", Runtime: "runsc"}:               1,
		{Template: "code-interpreter-v1", Runtime: "crun"}: 1,
		{Template: "my-app:v2", Runtime: "runsc"}:          3,
		{Template: "my-app:prod", Runtime: "runc"}:         0,
	}
	want[sandbox.PoolKey{Template: "base", Runtime: "runsc"}] = 2
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%v: got %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

func TestParsePoolsRefuses(t *testing.T) {
	for spec, msg := range map[string]string{
		"my-app:v2=3":  `"v2" is no runtime (runsc, crun, runc); a tag is written TEMPLATE@TAG (my-app@v2)`,
		"base":         "want TEMPLATE[@TAG][:RUNTIME]=N",
		"base=-1":      "want TEMPLATE[@TAG][:RUNTIME]=N",
		"base=x":       "want TEMPLATE[@TAG][:RUNTIME]=N",
		"@v1=1":        "want TEMPLATE[@TAG][:RUNTIME]=N",
		"my-app@=1":    "want TEMPLATE[@TAG][:RUNTIME]=N",
		"my-app@a@b=1": "want TEMPLATE[@TAG][:RUNTIME]=N",
		"base=1001":    "want TEMPLATE[@TAG][:RUNTIME]=N",
	} {
		if _, err := parsePools(spec, "runsc"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: got %v, want an error containing %q", spec, err, msg)
		}
	}
}
