package builder

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestApplyEnv: ENV values are evaluated against the env so far (then a
// root process's defaults), as E2B's build server evaluates them.
func TestApplyEnv(t *testing.T) {
	env := map[string]string{"IMG": "/img"}
	applyEnv(env, []string{"PATH", "/opt/bin:$PATH", "A", "${IMG}/a", "B", "$A/b", "C", "${NOPE:-dflt}|${IMG:-x}|${NOPE-d2}|$NOPE.",
		"D", `it's "quoted" \n 100%`, "E", "$$ $1 ${HOME}", "PATH", "/second:$PATH"})
	want := map[string]string{"IMG": "/img", "PATH": "/second:/opt/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"A": "/img/a", "B": "/img/a/b", "C": "dflt|/img|d2|.", "D": `it's "quoted" \n 100%`, "E": "$$ $1 /root"}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}
