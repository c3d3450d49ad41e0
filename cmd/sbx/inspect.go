package main

import (
	"fmt"
	"text/tabwriter"
	"time"
)

// inspectCmd is `sbx inspect ID...`: the sandboxes as a JSON array (E2B's
// SandboxDetail), like docker inspect.
type inspectCmd struct {
	IDs []string `arg:"" name:"id" help:"sandboxes to describe"`
}

func (x *inspectCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	out := []any{}
	for _, id := range x.IDs {
		sb, err := c.Get(e.ctx, id)
		if err != nil {
			code = max(code, sandboxError(e, id, err))
			continue
		}
		out = append(out, sb)
	}
	if printJSON(e.std, out) != 0 {
		return 1
	}
	return code
}

// metricsCmd is `sbx metrics ID`: a sandbox's resource samples.
type metricsCmd struct {
	JSON bool   `name:"json" help:"print a JSON array (E2B SandboxMetric objects)"`
	ID   string `arg:"" name:"id" help:"the sandbox"`
}

func (m *metricsCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	ms, err := c.Metrics(e.ctx, m.ID)
	if err != nil {
		return sandboxError(e, m.ID, err)
	}
	if m.JSON {
		return printJSON(e.std, ms)
	}
	tw := tabwriter.NewWriter(e.std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCPUS\tCPU %\tMEMORY\tDISK")
	for _, s := range ms {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s / %s\t%s / %s\n", s.Timestamp.Local().Format(time.TimeOnly), s.CPUCount, s.CPUUsedPct,
			mib(s.MemUsed), mib(s.MemTotal), mib(s.DiskUsed), mib(s.DiskTotal))
	}
	tw.Flush()
	return 0
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }
