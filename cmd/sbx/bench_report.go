package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// benchResult is everything one `sbx bench` run measured. Every phase is
// also given as a ratio to the runtime's floor measured in the same run.
type benchResult struct {
	Runtime  string    `json:"runtime"`
	Template string    `json:"template"`
	Floor    *floor    `json:"floor,omitempty"`
	Phases   []*phase  `json:"phases"`
	Idle     *capacity `json:"idle,omitempty"`
}

// sandboxRuntime is the runtime the bench's sandboxes run on: --runtime, or
// the server's default as one sandbox reports it.
func sandboxRuntime(ctx context.Context, c *client.Client, f benchFlags) (string, error) {
	if f.runtime != "" {
		return f.runtime, nil
	}
	sb, err := c.Create(ctx, f.createRequest(time.Minute))
	if err != nil {
		return "", fmt.Errorf("learn the server's runtime: %w", err)
	}
	defer c.Kill(context.WithoutCancel(ctx), sb.SandboxID)
	d, err := c.Get(ctx, sb.SandboxID)
	if err != nil {
		return "", fmt.Errorf("learn the server's runtime: %w", err)
	}
	return d.Runtime, nil
}

// finish computes every phase's quantiles, runtime and ratios to the floor.
func (r *benchResult) finish() {
	for _, p := range r.Phases {
		p.finish()
		p.Runtime = r.Runtime
		if r.Floor != nil && r.Floor.P50 > 0 {
			p.P50Floor, p.P95Floor = ratio(p.P50, r.Floor.P50), ratio(p.P95, r.Floor.P50)
		}
	}
}

func ratio(v, floor float64) float64 { return math.Round(v/floor*100) / 100 }

// ratioCell is a ratio to the floor as the table shows it: "-" when no floor
// was measured (--floor 0 or its error), never a misleading 0.00.
func ratioCell(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

// exitCode is 1 when any phase had errors, the idle phase fell short or the
// floor could not be measured.
func (r *benchResult) exitCode() int {
	for _, p := range r.Phases {
		if p.Errors > 0 {
			return 1
		}
	}
	if (r.Idle != nil && r.Idle.Started < r.Idle.Target) || (r.Floor != nil && r.Floor.Err != "") {
		return 1
	}
	return 0
}

func (r *benchResult) report(w io.Writer, asJSON bool) {
	if asJSON {
		_ = json.NewEncoder(w).Encode(r)
		return
	}
	fmt.Fprintf(w, "runtime %s, template %s\n", r.Runtime, r.Template)
	if fl := r.Floor; fl != nil && fl.Err == "" {
		fmt.Fprintf(w, "floor (bare %s run, bash -l -c true from a running shell, n=%d): p50 %.1f ms, p95 %.1f ms, cold %.1f ms\n",
			fl.Runtime, fl.N, fl.P50, fl.P95, fl.Cold)
	} else if fl != nil {
		fmt.Fprintf(w, "floor: %s\n", fl.Err)
	}
	printPhases(w, r.Phases)
	if r.Idle != nil {
		printCapacity(w, r.Idle)
	}
}

func printPhases(w io.Writer, phases []*phase) {
	if len(phases) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\truntime\tn\terrors\tp50 ms\tp95 ms\tp99 ms\tmax ms\tp50/floor\tp95/floor\t")
	for _, p := range phases {
		if p.N == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t\n", p.Name, p.Runtime, p.N, p.Errors,
			p.P50, p.P95, p.P99, p.Max, ratioCell(p.P50Floor), ratioCell(p.P95Floor))
	}
	tw.Flush()
	for _, p := range phases {
		if p.Err != "" {
			fmt.Fprintf(w, "first error in %s: %s\n", p.Name, p.Err)
		}
	}
}
