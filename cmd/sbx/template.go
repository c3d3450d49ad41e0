package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/daemon"
	"github.com/sbx-dev/sbx/internal/template"
)

const templateUsage = `usage:
  sbx template build NAME [flags]   build a built-in template (as root, on the daemon's host, by the template
                                    builder: a Debian bootstrap source + provisioning, cached layers)
  sbx template ls --local [flags]   list the built-in templates registered on this host
  sbx template build -f Dockerfile -n NAME [flags] [CONTEXT]
                                    build a template from a Dockerfile through the daemon (see sbx template build -n x --help)
  sbx template ls [--json]          list the daemon's templates
  sbx template inspect NAME|ID      print a template and its builds as JSON
  sbx template rm NAME|ID...        remove templates

built-in templates: %s
flags of the built-in build and ls --local:
`

// runTemplateStd implements the template commands. `build NAME` and
// `ls --local` work on the template directory directly, as root on the
// daemon's host; the others are clients of the daemon's template API.
func runTemplateStd(ctx context.Context, args []string, std stdio) int {
	verb := ""
	if len(args) > 0 {
		verb = args[0]
	}
	switch {
	case verb == "build" && isDockerfileBuild(args[1:]):
		return runTemplateBuild(ctx, args[1:], std)
	case verb == "ls" && !hasFlag(args[1:], "local", "data-dir", "templates-dir"):
		return runTemplateLs(ctx, args[1:], std)
	case verb == "rm":
		return runTemplateRm(ctx, args[1:], std)
	case verb == "inspect":
		return runTemplateInspect(ctx, args[1:], std)
	}
	return runLocalTemplate(ctx, args)
}

// runLocalTemplate implements `sbx template build NAME` and
// `sbx template ls --local` on the template directory.
func runLocalTemplate(ctx context.Context, args []string) int {
	fs, opts := templateFlags()
	if len(args) == 0 || (args[0] != "build" && args[0] != "ls") {
		fs.Usage()
		return 2
	}
	verb, name, err := parseTemplateArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if verb == "ls" {
		return listTemplates(opts.store(), os.Stdout, opts.json)
	}
	done, code := markBuilding(ctx, opts, name)
	if done == nil {
		return code
	}
	defer done()
	return buildTemplate(ctx, opts.builtin(), name)
}

type templateOpts struct {
	dataDir, dir, mirror, seed string
	uidBase                    uint
	json, local                bool
}

func (o *templateOpts) store() *template.Store {
	if o.dir == "" {
		o.dir = filepath.Join(o.dataDir, "templates")
	}
	return &template.Store{Dir: o.dir}
}

// builtin is the in-process builder of built-in templates over the
// templates dir's layer store.
func (o *templateOpts) builtin() *builder.Builtin {
	s := o.store()
	base := uint32(o.uidBase)
	return &builder.Builtin{Templates: s, Layers: daemon.LayerStore(s.Dir, builder.BuiltinOwner, base),
		TmpDir: filepath.Join(o.dataDir, "run", "build-views"), Mirror: o.mirror, Seed: o.seed, UIDBase: base}
}

func templateFlags() (*flag.FlagSet, *templateOpts) {
	o := &templateOpts{}
	fs := flag.NewFlagSet("sbx template", flag.ContinueOnError)
	fs.StringVar(&o.dataDir, "data-dir", "/var/lib/sbx", "the daemon's data directory")
	fs.StringVar(&o.dir, "templates-dir", "", "template store (default <data-dir>/templates)")
	fs.StringVar(&o.mirror, "mirror", template.DefaultMirror, "Debian mirror of the Debian source (build)")
	fs.StringVar(&o.seed, "seed", "", "copy this debootstrapped bookworm tree instead of running debootstrap (build)")
	fs.UintVar(&o.uidBase, "uid-base", 100000, "host uid of sandbox root in the user-namespaced copy (build; must match serve's)")
	fs.BoolVar(&o.json, "json", false, "print template.json records (ls)")
	fs.BoolVar(&o.local, "local", false, "list the templates built on this host (ls)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), templateUsage, strings.Join(template.Names(), ", "))
		fs.PrintDefaults()
	}
	return fs, o
}

// parseTemplateArgs parses "VERB [NAME] [flags]", flags before or after NAME.
func parseTemplateArgs(fs *flag.FlagSet, args []string) (verb, name string, err error) {
	verb, rest := args[0], args[1:]
	if err := fs.Parse(rest); err != nil {
		return "", "", err
	}
	if verb == "build" && fs.NArg() > 0 {
		name = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return "", "", err
		}
	}
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("sbx template %s: unexpected arguments %q", verb, fs.Args())
	case verb == "build" && name == "":
		err = fmt.Errorf("sbx template build: a template name is required")
	}
	if err != nil {
		fmt.Fprintf(fs.Output(), "%v\n\n", err)
		fs.Usage()
		return "", "", err
	}
	return verb, name, nil
}

func buildTemplate(ctx context.Context, b *builder.Builtin, name string) int {
	def, ok := template.Definitions[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "sbx template build: no built-in template %q (have %s; build others with -f Dockerfile -n NAME)\n",
			name, strings.Join(template.Names(), ", "))
		return 1
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "sbx template build: building a built-in template needs root (debootstrap, chroot, chown)")
		return 1
	}
	start := time.Now()
	t, err := b.Build(ctx, def, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx template build:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "template %s ready: %d MiB, build %s (%s)\n  layers %s under %s\n",
		t.Name, t.SizeBytes>>20, t.BuildID, time.Since(start).Round(time.Millisecond), strings.Join(t.Layers, " "), b.Layers.Dir)
	return 0
}

func listTemplates(s *template.Store, w io.Writer, asJSON bool) int {
	ts, err := s.List()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx template ls:", err)
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if ts == nil {
			ts = []*template.Template{}
		}
		_ = enc.Encode(ts)
		return 0
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tLAYERS\tCREATED\tBUILD")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%d MiB\t%d\t%s\t%s\n", t.Name, t.SizeBytes>>20, len(t.Layers), t.Created.Format(time.RFC3339), t.BuildID)
	}
	tw.Flush()
	return 0
}
