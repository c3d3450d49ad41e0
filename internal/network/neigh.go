package network

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Every sandbox holds two IPv4 neighbour entries: the host's for the
// sandbox's address and the sandbox's for its gateway. The kernel's
// neighbour table is one for all network namespaces, and past gc_thresh3
// (1024 by default) it refuses new entries: a host stops reaching new
// sandboxes at about 500 (their agents never answer). Past gc_thresh2
// entries unused for 5 s are collected early (they resolve again on use).

// neighDir is where the table's thresholds are (a variable for tests).
var neighDir = "/proc/sys/net/ipv4/neigh/default"

// RaiseNeighbourTable raises the kernel's neighbour table thresholds so
// that this many more sandboxes fit beside what the host already holds:
// gc_thresh3 to 2×sandboxes+1024 and gc_thresh2 to 2×sandboxes, each only
// if lower (never lowered: another daemon or the administrator may need
// more). It returns what it changed ("" if nothing). The thresholds exist
// only in the host's first network namespace: elsewhere (a node in a pod
// off the host network) it fails and the host's administrator sets them.
func RaiseNeighbourTable(sandboxes int) (string, error) {
	var changed []string
	for _, t := range []struct {
		name string
		want int
	}{{"gc_thresh3", 2*sandboxes + 1024}, {"gc_thresh2", 2 * sandboxes}} {
		p := neighDir + "/" + t.name
		b, err := os.ReadFile(p)
		if err != nil {
			return strings.Join(changed, " "), fmt.Errorf("neighbour table: %w", err)
		}
		cur, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || cur >= t.want {
			continue
		}
		if err := os.WriteFile(p, []byte(strconv.Itoa(t.want)), 0); err != nil {
			return strings.Join(changed, " "), fmt.Errorf("neighbour table: %w", err)
		}
		changed = append(changed, fmt.Sprintf("%s %d->%d", t.name, cur, t.want))
	}
	return strings.Join(changed, " "), nil
}
