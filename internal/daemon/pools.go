package daemon

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// poolSyntax is --pool's grammar, as its errors and --help say it.
const poolSyntax = "TEMPLATE[@TAG][:RUNTIME]=N"

// parsePools parses --pool "base=2,code-interpreter-v1:crun=1,my-app@v2=3":
// warm pool sizes per template, optionally per runtime (default: the server
// default). ':' separates the runtime, so a template's tag is written with
// '@' (my-app@v2 pools my-app:v2); a ':' that names no runtime is refused
// with that hint rather than taken as a runtime no sandbox could start on.
func parsePools(spec, defaultRuntime string) (map[sandbox.PoolKey]int, error) {
	out := map[sandbox.PoolKey]int{}
	if spec == "" {
		return out, nil
	}
	for _, item := range strings.Split(spec, ",") {
		key, err := parsePool(strings.TrimSpace(item), defaultRuntime)
		if err != nil {
			return nil, err
		}
		_, v, _ := strings.Cut(item, "=")
		out[key], _ = strconv.Atoi(strings.TrimSpace(v))
	}
	return out, nil
}

// parsePool parses one TEMPLATE[@TAG][:RUNTIME]=N into its key (the size
// is checked here and read by the caller).
func parsePool(item, defaultRuntime string) (sandbox.PoolKey, error) {
	k, v, ok := strings.Cut(item, "=")
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 || n > 1000 {
		return sandbox.PoolKey{}, fmt.Errorf("--pool %q: want %s", item, poolSyntax)
	}
	tmpl, rt, _ := strings.Cut(k, ":")
	switch rt {
	case "":
		rt = defaultRuntime
	case "runsc", "crun", "runc":
	default:
		return sandbox.PoolKey{}, fmt.Errorf("--pool %q: %q is no runtime (runsc, crun, runc); a tag is written TEMPLATE@TAG (%s@%s): want %s", item, rt, tmpl, rt, poolSyntax)
	}
	name, tag, tagged := strings.Cut(tmpl, "@")
	if name == "" || (tagged && (tag == "" || strings.Contains(tag, "@"))) {
		return sandbox.PoolKey{}, fmt.Errorf("--pool %q: want %s", item, poolSyntax)
	}
	if tagged {
		tmpl = name + ":" + tag
	}
	return sandbox.PoolKey{Template: tmpl, Runtime: rt}, nil
}
