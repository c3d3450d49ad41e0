package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// lsCmd is `sbx ls`: the daemon's sandboxes as a table or JSON.
type lsCmd struct {
	JSON     bool   `name:"json" help:"print a JSON array (E2B ListedSandbox objects)"`
	Quiet    bool   `short:"q" help:"print only the IDs"`
	Metadata kvList `placeholder:"K=V" help:"only sandboxes with this metadata (repeatable; all must match)"`
	State    string `help:"only sandboxes in these states: comma list of running, paused"`
}

func (l *lsCmd) run(e *env) int {
	opts := client.ListOptions{Metadata: l.Metadata}
	if l.State != "" {
		opts.State = strings.Split(l.State, ",")
	}
	for _, st := range opts.State {
		if st != "running" && st != "paused" {
			e.errorf("--state %q: want running, paused or both (running,paused)", st)
			return exitUsage
		}
	}
	c, code := e.client()
	if c == nil {
		return code
	}
	list, err := c.List(e.ctx, opts)
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	switch {
	case l.JSON:
		return printJSON(e.std, list)
	case l.Quiet:
		for _, sb := range list {
			fmt.Fprintln(e.std.out, cellText(sb.SandboxID))
		}
		return 0
	}
	printTable(e.std, list, time.Now())
	return 0
}

func printTable(std stdio, list []client.ListedSandbox, now time.Time) {
	w := tabwriter.NewWriter(std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTEMPLATE\tSTATE\tSTARTED\tENDS\tMETADATA")
	for _, sb := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", cellText(sb.SandboxID), cellText(sb.TemplateID), cellText(sb.State),
			ago(now.Sub(sb.StartedAt)), in(sb.EndAt.Sub(now)), metadata(sb.Metadata))
	}
	w.Flush()
}

func ago(d time.Duration) string { return d.Round(time.Second).String() + " ago" }

func in(d time.Duration) string {
	if d < 0 {
		return "expired"
	}
	return "in " + d.Round(time.Second).String()
}

func metadata(md map[string]string) string {
	parts := make([]string, 0, len(md))
	for k, v := range md {
		parts = append(parts, cellText(k+"="+v)) // one table cell
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func boolCode(failed bool) int {
	if failed {
		return 1
	}
	return 0
}
