package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// runTemplateLs implements `sbx template ls`: the daemon's templates.
func runTemplateLs(ctx context.Context, args []string, std stdio) int {
	var cf clientFlags
	fs := newFlagSet("template ls", "sbx template ls [--json]\n\nLists the daemon's templates (--local: those built on this host).", std, &cf)
	asJSON := fs.Bool("json", false, "print E2B's template records as JSON")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	c, code := templateClient(fs, &cf, pos, 0, std)
	if c == nil {
		return code
	}
	ts, err := c.ListTemplates(ctx)
	if err != nil {
		fmt.Fprintln(std.err, "sbx template ls:", termText(explain(err)))
		return 1
	}
	if *asJSON {
		return printJSON(std, ts)
	}
	tw := tabwriter.NewWriter(std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAMES\tSTATUS\tCPU\tMEMORY\tBUILDS\tSPAWNS\tUPDATED")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d MiB\t%d\t%d\t%s\n", cellText(t.TemplateID), cellText(strings.Join(templateNames(t), ",")),
			cellText(t.BuildStatus), t.CPUCount, t.MemoryMB, t.BuildCount, t.SpawnCount, t.UpdatedAt.Local().Format(time.DateTime))
	}
	tw.Flush()
	return 0
}

func templateNames(t client.TemplateInfo) []string {
	if len(t.Names) > 0 {
		return t.Names
	}
	return t.Aliases
}

// runTemplateInspect implements `sbx template inspect NAME|ID`.
func runTemplateInspect(ctx context.Context, args []string, std stdio) int {
	var cf clientFlags
	fs := newFlagSet("template inspect", "sbx template inspect NAME|ID\n\nPrints a template and its builds as JSON.", std, &cf)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	c, code := templateClient(fs, &cf, pos, 1, std)
	if c == nil {
		return code
	}
	t, err := getTemplate(ctx, c, pos[0])
	if err != nil {
		fmt.Fprintf(std.err, "sbx template inspect: %s: %s\n", pos[0], termText(explain(err)))
		return 1
	}
	return printJSON(std, t)
}

// runTemplateRm implements `sbx template rm NAME|ID...`; it exits 1 if any
// template was not removed.
func runTemplateRm(ctx context.Context, args []string, std stdio) int {
	var cf clientFlags
	fs := newFlagSet("template rm", "sbx template rm NAME|ID...\n\nRemoves templates. Exits 1 if any was not found or not removed.", std, &cf)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	c, code := templateClient(fs, &cf, pos, -1, std)
	if c == nil {
		return code
	}
	for _, ref := range pos {
		id, err := resolveTemplate(ctx, c, ref)
		if err == nil {
			err = c.DeleteTemplate(ctx, id)
		}
		if err != nil {
			fmt.Fprintf(std.err, "sbx template rm: %s: %s\n", ref, termText(explain(err)))
			code = 1
			continue
		}
		fmt.Fprintln(std.out, ref)
	}
	return code
}

// templateClient checks the positional count (want; -1: one or more) and
// returns the client, or nil and the exit code.
func templateClient(fs *flag.FlagSet, cf *clientFlags, pos []string, want int, std stdio) (*client.Client, int) {
	if (want >= 0 && len(pos) != want) || (want < 0 && len(pos) == 0) {
		fmt.Fprintf(std.err, "sbx template: unexpected arguments %q\n\n", pos)
		fs.Usage()
		return nil, exitUsage
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintln(std.err, "sbx template:", err)
		return nil, exitUsage
	}
	return c, 0
}

// resolveTemplate turns a name into a template ID; what is no known name
// is taken as an ID.
func resolveTemplate(ctx context.Context, c *client.Client, ref string) (string, error) {
	a, err := c.TemplateByAlias(ctx, ref)
	switch {
	case err == nil:
		return a.TemplateID, nil
	case errors.Is(err, client.ErrNotFound):
		return ref, nil
	}
	return "", err
}

func getTemplate(ctx context.Context, c *client.Client, ref string) (*client.TemplateDetail, error) {
	id, err := resolveTemplate(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	return c.GetTemplate(ctx, id)
}

func printJSON(std stdio, v any) int {
	enc := json.NewEncoder(std.out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(std.err, "sbx template:", err)
		return 1
	}
	return 0
}
