package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/sbx-dev/sbx/internal/daemon"
)

// The commands below keep their own flag sets (serve.go, template*.go,
// bench.go): kong hands them every argument after the command's name.
// Global --url/--api-key given before the command reach their flag sets
// through SBX_URL/SBX_API_KEY, which those flags default to.

type serveCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"serve's flags (sbx serve --help)"`
}

func (c *serveCmd) run(e *env) int { return runServe(e.ctx, c.Args) }

type benchCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"bench's flags (sbx bench --help)"`
}

func (c *benchCmd) run(e *env) int {
	e.exportGlobals()
	return runBench(e.ctx, c.Args)
}

type templateCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"build|ls|inspect|rm and their flags (sbx template --help)"`
}

// run routes to the template commands; help, and no verb, print their
// usage (exit 0 for help, 2 for no verb).
func (c *templateCmd) run(e *env) int {
	if len(c.Args) == 0 || slices.Contains([]string{"-h", "-help", "--help", "help"}, c.Args[0]) {
		fs, _ := templateFlags()
		fs.SetOutput(e.std.out)
		fs.Usage()
		return boolCode(len(c.Args) == 0) * exitUsage
	}
	e.exportGlobals()
	return runTemplateStd(e.ctx, c.Args, e.std)
}

// exportGlobals passes the global client flags to a command with its own
// flag set.
func (e *env) exportGlobals() {
	_ = os.Setenv("SBX_URL", e.root.URL)
	if e.root.APIKey != "" {
		_ = os.Setenv("SBX_API_KEY", e.root.APIKey)
	}
}

// runServe is sbx serve: its flags, the daemon's logger, then the daemon
// (internal/daemon, with /mcp served by this command's MCP tools) until ctx
// ends.
func runServe(ctx context.Context, args []string) int {
	cfg, err := daemon.ParseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx serve:", err)
		return 2
	}
	log := cfg.Logger()
	cfg.MCP = mcpHTTPHandler
	if err := daemon.Serve(ctx, cfg, log); err != nil {
		log.Error("sbx serve failed", "err", err)
		return 1
	}
	return 0
}
