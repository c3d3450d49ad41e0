package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/dockerfile"
)

const templateBuildSynopsis = `sbx template build -f Dockerfile -n NAME [flags] [CONTEXT]

Builds a template from a Dockerfile through the daemon, as the E2B SDK's
Template.build(Template().fromDockerfile(...)) does: the files of each COPY
are uploaded unless the daemon has them already, then the build's log is
followed until it ends. CONTEXT defaults to "." and -f to CONTEXT/Dockerfile;
CONTEXT/.dockerignore is honoured. FROM NAME[:TAG] with no registry host
builds on the sbx template NAME when there is one (offline); FROM
docker.io/library/NAME always pulls the image. Steps run as root in / until
USER or WORKDIR say otherwise; the template ends as user in /home/user after
an image, with the sbx template's own user and workdir after FROM of one,
unless the Dockerfile sets its own. Exits 0 when the template is
ready, 1 if the build fails. The template ID is printed on stdout.`

// buildOpts are the flags and argument of a Dockerfile build.
type buildOpts struct {
	file, name, readyCmd, context string
	tags                          strList
	buildArgs                     kvList
	noCache                       bool
	cpu, memoryMB                 int
	from                          fromChoice // how the FROM was read (resolveFrom)
}

func templateBuildFlags(std stdio, cf *clientFlags) (*flag.FlagSet, *buildOpts) {
	o := &buildOpts{buildArgs: kvList{}}
	fs := newFlagSet("template build", templateBuildSynopsis, std, cf)
	for _, n := range []string{"f", "file"} {
		fs.StringVar(&o.file, n, "", "the Dockerfile (default CONTEXT/Dockerfile)")
	}
	for _, n := range []string{"n", "name"} {
		fs.StringVar(&o.name, n, "", "template name, NAME or NAME:TAG (required)")
	}
	fs.Var(&o.tags, "tag", "also tag the build TAG (repeatable)")
	fs.Var(o.buildArgs, "build-arg", "set an ARG, K=V (repeatable)")
	fs.BoolVar(&o.noCache, "no-cache", false, "rebuild every step, ignoring the build cache")
	fs.IntVar(&o.cpu, "cpu", 0, "vCPUs of the template's sandboxes (default: the daemon's)")
	fs.IntVar(&o.memoryMB, "memory-mb", 0, "memory of the template's sandboxes in MiB (default: the daemon's)")
	fs.StringVar(&o.readyCmd, "ready-cmd", "", "command that exits 0 once the start command is ready")
	return fs, o
}

// parseTemplateBuild parses the args of a Dockerfile build; ok is false if
// the command must end with code.
func parseTemplateBuild(args []string, std stdio) (o *buildOpts, cf *clientFlags, code int, ok bool) {
	cf = &clientFlags{}
	fs, o := templateBuildFlags(std, cf)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return nil, nil, code, false
	}
	var err error
	switch {
	case len(pos) > 1:
		err = fmt.Errorf("one CONTEXT directory at most, got %q", pos)
	case o.name == "":
		err = fmt.Errorf("-n NAME is required")
	case o.cpu < 0 || o.memoryMB < 0:
		err = fmt.Errorf("--cpu and --memory-mb must not be negative")
	}
	if err != nil {
		fmt.Fprintf(std.err, "sbx template build: %v\n\n", err)
		fs.Usage()
		return nil, nil, exitUsage, false
	}
	o.context = "."
	if len(pos) == 1 {
		o.context = pos[0]
	}
	if o.file == "" {
		o.file = filepath.Join(o.context, "Dockerfile")
	}
	return o, cf, 0, true
}

// runTemplateBuild implements `sbx template build -f Dockerfile -n NAME`.
func runTemplateBuild(ctx context.Context, args []string, std stdio) int {
	o, cf, code, ok := parseTemplateBuild(args, std)
	if !ok {
		return code
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintln(std.err, "sbx template build:", err)
		return exitUsage
	}
	spec, ignore, err := o.prepare(std)
	if err == nil {
		o.from, err = resolveFrom(ctx, c, spec, std.err)
	}
	if err != nil {
		fmt.Fprintln(std.err, "sbx template build:", termText(explain(err)))
		return 1
	}
	return runBuild(ctx, c, o, spec, ignore, std)
}

// prepare parses the Dockerfile and hashes the files of its COPY steps; it
// returns the spec and the .dockerignore patterns.
func (o *buildOpts) prepare(std stdio) (*dockerfile.Spec, []string, error) {
	if fi, err := os.Stat(o.context); err != nil || !fi.IsDir() {
		return nil, nil, fmt.Errorf("context %s: not a directory", o.context)
	}
	f, err := os.Open(o.file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	spec, err := dockerfile.Parse(f, o.buildArgs)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", o.file, err)
	}
	for _, w := range spec.Warnings {
		fmt.Fprintf(std.err, "warning: %s\n", w)
	}
	spec.Force, spec.ReadyCmd = o.noCache, o.readyCmd
	ignore, err := dockerfile.ReadDockerignore(o.context)
	if err != nil {
		return nil, nil, err
	}
	if err := spec.HashFiles(o.context, ignore); err != nil {
		return nil, nil, err
	}
	return spec, ignore, nil
}

// clientSpec is spec in the client's types.
func clientSpec(spec *dockerfile.Spec) client.TemplateSpec {
	cs := client.TemplateSpec{FromImage: spec.FromImage, FromTemplate: spec.FromTemplate,
		StartCmd: spec.StartCmd, ReadyCmd: spec.ReadyCmd, Force: spec.Force, Steps: []client.TemplateStep{}}
	for _, s := range spec.Steps {
		cs.Steps = append(cs.Steps, client.TemplateStep{Type: s.Type, Args: s.Args, FilesHash: s.FilesHash, Force: s.Force})
	}
	return cs
}
