package metrics

import (
	"strconv"
	"strings"
)

// ParseText reads Prometheus text-format samples into "name{labels}" →
// value (comments skipped). Tests and `sbx` tooling use it to check a
// scrape; it is not a full parser (no escapes inside label values).
func ParseText(s string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(s, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}
