package api

import (
	"fmt"
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// E2B's sandbox "state" on the wire is one of these two; this file is the
// one place a record's store.State becomes it and the list filter's values
// are read.
const (
	wireRunning = "running"
	wirePaused  = "paused"
)

// wireState is E2B's state of a sandbox in state s: a paused one is
// "paused"; every other state a live sandbox can be in is "running" (one
// being paused runs until its image is complete).
func wireState(s store.State) string {
	if s == store.StatePaused {
		return wirePaused
	}
	return wireRunning
}

// parseStates reads the list filter's comma list of wire states (contract
// §2: running, paused); "" is no filter (nil).
func parseStates(v string) (map[string]bool, error) {
	if v == "" {
		return nil, nil
	}
	out := map[string]bool{}
	for _, s := range strings.Split(v, ",") {
		if s != wireRunning && s != wirePaused {
			return nil, fmt.Errorf("%w: state must be %s or %s", sandbox.ErrInvalid, wireRunning, wirePaused)
		}
		out[s] = true
	}
	return out, nil
}
