package daemon

import (
	"strings"
	"testing"
)

// TestRoleFlags: --role and --front-listen combine only as documented: a
// front needs the cluster URL, and so does a node playing both roles.
func TestRoleFlags(t *testing.T) {
	const url = "postgres://u@127.0.0.1:1/db"
	for _, c := range []struct {
		args []string
		want string // "" = accepted; else a part of the error
	}{
		{nil, ""},
		{[]string{"--role", "api", "--cluster", url}, ""},
		{[]string{"--cluster", url, "--front-listen", "127.0.0.1:0"}, ""},
		{[]string{"--role", "api"}, "--role api needs --cluster"},
		{[]string{"--front-listen", "127.0.0.1:0"}, "--front-listen needs --cluster"},
		{[]string{"--role", "api", "--cluster", url, "--front-listen", "127.0.0.1:0"}, "--front-listen is for a node"},
		{[]string{"--role", "both", "--cluster", url}, `--role "both"`},
	} {
		t.Setenv("SBX_CLUSTER_URL", "")
		_, err := ParseFlags(c.args)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
}
