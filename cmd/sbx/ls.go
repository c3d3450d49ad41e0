package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// runLs implements `sbx ls`: the daemon's sandboxes as a table or JSON.
func runLs(ctx context.Context, args []string, std stdio) int {
	var cf clientFlags
	fs := newFlagSet("ls", "sbx ls [flags]\n\nLists sandboxes, newest first.", std, &cf)
	asJSON := fs.Bool("json", false, "print a JSON array (E2B ListedSandbox objects)")
	md := kvList{}
	fs.Var(md, "metadata", "only sandboxes with metadata `K=V` (repeatable; all must match)")
	state := fs.String("state", "", "only sandboxes in these states: comma list of running, paused")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.err, "sbx ls: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintln(std.err, "sbx ls:", err)
		return exitUsage
	}
	opts := client.ListOptions{Metadata: md}
	if *state != "" {
		opts.State = strings.Split(*state, ",")
	}
	list, err := c.List(ctx, opts)
	if err != nil {
		fmt.Fprintln(std.err, "sbx ls:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(std.out)
		enc.SetIndent("", "  ")
		return boolCode(enc.Encode(list) != nil)
	}
	printTable(std, list, time.Now())
	return 0
}

func printTable(std stdio, list []client.ListedSandbox, now time.Time) {
	w := tabwriter.NewWriter(std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTEMPLATE\tSTATE\tSTARTED\tENDS\tMETADATA")
	for _, sb := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", sb.SandboxID, sb.TemplateID, sb.State,
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
		parts = append(parts, k+"="+v)
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
