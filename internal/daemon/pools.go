package daemon

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// parsePools parses --pool "base=2,code-interpreter-v1:crun=1": warm pool
// sizes per template, optionally per runtime (default: the server default).
func parsePools(spec, defaultRuntime string) (map[sandbox.PoolKey]int, error) {
	out := map[sandbox.PoolKey]int{}
	if spec == "" {
		return out, nil
	}
	for _, item := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || n > 1000 {
			return nil, fmt.Errorf("--pool %q: want TEMPLATE[:RUNTIME]=N", item)
		}
		tmpl, rt, _ := strings.Cut(k, ":")
		if rt == "" {
			rt = defaultRuntime
		}
		out[sandbox.PoolKey{Template: tmpl, Runtime: rt}] = n
	}
	return out, nil
}
