package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPhasesWithoutFloor: a run without a floor (--floor 0) shows "-" for
// the ratios, not 0.00, and one with a floor shows them.
func TestPhasesWithoutFloor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		floor *floor
		want  string
	}{
		{"no floor", nil, "-"},
		{"floor failed", &floor{Err: "no runsc"}, "-"},
		{"floor", &floor{P50: 10}, "2.00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &phase{Name: "TTI"}
			p.add(20*time.Millisecond, nil)
			r := &benchResult{Runtime: "runsc", Floor: tc.floor, Phases: []*phase{p}}
			r.finish()
			var b bytes.Buffer
			printPhases(&b, r.Phases)
			row := strings.Fields(strings.Split(b.String(), "\n")[1])
			if got := row[len(row)-2]; got != tc.want {
				t.Errorf("p50/floor = %q, want %q in:\n%s", got, tc.want, b.String())
			}
		})
	}
}
