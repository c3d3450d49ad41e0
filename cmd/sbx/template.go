package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/sbx-dev/sbx/internal/template"
)

// runTemplate implements `sbx template build NAME` and `sbx template ls`.
// Both work on the template directory directly (building needs root).
func runTemplate(ctx context.Context, args []string) int {
	if len(args) == 0 || (args[0] != "build" && args[0] != "ls") {
		fmt.Fprintln(os.Stderr, "usage: sbx template build NAME [flags] | sbx template ls [flags]\n\ntemplates: base, code-interpreter-v1")
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("template "+verb, flag.ContinueOnError)
	dataDir := fs.String("data-dir", "/var/lib/sbx", "the daemon's data directory")
	dir := fs.String("templates-dir", "", "template store (default: <data-dir>/templates)")
	mirror := fs.String("mirror", "http://deb.debian.org/debian", "Debian mirror for debootstrap")
	seed := fs.String("seed", "", "copy this debootstrapped bookworm tree instead of running debootstrap")
	uidBase := fs.Uint("uid-base", 100000, "host uid of sandbox root for the user-namespaced copy")
	name := ""
	rest := args[1:]
	if verb == "build" && len(rest) > 0 && rest[0] != "" && rest[0][0] != '-' {
		name, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if *dir == "" {
		*dir = filepath.Join(*dataDir, "templates")
	}
	s := &template.Store{Dir: *dir, Mirror: *mirror, Seed: *seed, UIDBase: uint32(*uidBase)}
	if verb == "ls" {
		return listTemplates(s)
	}
	if name == "" {
		fmt.Fprintln(os.Stderr, "sbx template build: name required (base, code-interpreter-v1)")
		return 2
	}
	start := time.Now()
	t, err := s.Build(ctx, name, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx template build:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "template %s ready (%d MiB) in %s\n", t.Name, t.SizeBytes>>20, time.Since(start).Round(time.Millisecond))
	return 0
}

func listTemplates(s *template.Store) int {
	ts, err := s.List()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx template ls:", err)
		return 1
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSIZE\tCREATED")
	for _, t := range ts {
		fmt.Fprintf(w, "%s\t%d MiB\t%s\n", t.Name, t.SizeBytes>>20, t.Created.Format(time.RFC3339))
	}
	w.Flush()
	return 0
}
