package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/sbx-dev/sbx/client"
)

// cliRoot is the command line: global flags, then one field per command.
// Flags may come before or after the command and its arguments; a command
// that runs another program (run, exec) takes everything after its first
// argument, or after "--", as that program's.
type cliRoot struct {
	URL    string `name:"url" env:"SBX_URL" default:"${default_url}" help:"sbx daemon URL"`
	APIKey string `name:"api-key" env:"SBX_API_KEY" help:"API key"`

	Run     runCmd     `cmd:"" help:"Run a command in a new sandbox and remove it."`
	Exec    execCmd    `cmd:"" help:"Run a command in a running sandbox."`
	Shell   shellCmd   `cmd:"" help:"Open an interactive shell in a running sandbox."`
	Ls      lsCmd      `cmd:"" aliases:"ps" help:"List sandboxes."`
	Inspect inspectCmd `cmd:"" help:"Print a sandbox as JSON."`
	Logs    logsCmd    `cmd:"" help:"Print a sandbox's logs."`
	Metrics metricsCmd `cmd:"" help:"Print a sandbox's resource use."`
	Cp      cpCmd      `cmd:"" help:"Copy files between a sandbox and this machine."`
	Kill    killCmd    `cmd:"" aliases:"rm" help:"Remove sandboxes."`
	Pause   pauseCmd   `cmd:"" help:"Pause sandboxes (memory and files on runsc)."`
	Resume  resumeCmd  `cmd:"" help:"Resume paused sandboxes."`
	Fork    forkCmd    `cmd:"" help:"Start live copies of a running sandbox."`
	Keys    keysCmd    `cmd:"" help:"Create, list or revoke your team's API keys."`
	Teams   teamsCmd   `cmd:"" help:"Create, list or remove teams (admin key)."`

	Template   templateCmd   `cmd:"" passthrough:"" help:"Build, list, inspect or remove templates (sbx template --help)."`
	Serve      serveCmd      `cmd:"" passthrough:"" help:"Run the sbx daemon (API + sandbox traffic) (sbx serve --help)."`
	Bench      benchCmd      `cmd:"" passthrough:"" help:"Benchmark a running daemon (sbx bench --help)."`
	Audit      auditCmd      `cmd:"" help:"Print or verify the audit log (on the daemon's host)."`
	Debug      debugCmd      `cmd:"" help:"Collect a bug-report bundle from the daemon (sbx debug bundle)."`
	Service    serviceCmd    `cmd:"" help:"Install the daemon as a systemd service (sbx service install -- [serve flags])."`
	MCP        mcpCmd        `cmd:"" name:"mcp" help:"Serve sbx sandboxes as MCP tools over stdio."`
	Version    versionCmd    `cmd:"" help:"Print the client's and the daemon's versions."`
	Completion completionCmd `cmd:"" help:"Print a shell completion script (bash or zsh)."`
}

// env is what a command runs with.
type env struct {
	ctx  context.Context
	std  stdio
	root *cliRoot
	// model is the parsed command line's model (for completion).
	model *kong.Application
	// name is the command path, e.g. "template ls", for messages.
	name string
}

// runner is implemented by every command.
type runner interface {
	run(e *env) int
}

// client validates the global flags and returns a client of the daemon; on
// failure it reports and returns nil and the exit code.
func (e *env) client() (*client.Client, int) {
	cf := clientFlags{url: e.root.URL, apiKey: e.root.APIKey}
	c, err := cf.client()
	if err != nil {
		e.errorf("%v", err)
		return nil, exitUsage
	}
	return c, 0
}

// errorf reports an error of the command, as text (termText: an error may
// carry a sandbox's or the daemon's words); error arguments are worded by
// explain.
func (e *env) errorf(format string, a ...any) {
	fmt.Fprintf(e.std.err, "sbx %s: %s\n", e.name, termText(fmt.Sprintf(format, explained(a)...)))
}

// kongExit carries kong's exit code (after --help) out of Parse.
type kongExit int

// Main parses args and runs the command; it returns the exit code.
func Main(ctx context.Context, args []string, std stdio) (code int) {
	root := &cliRoot{}
	parser, err := kong.New(root, kong.Name("sbx"),
		kong.Description("sbx runs sandboxes for AI agents; it speaks the E2B API."),
		kong.Writers(std.out, std.err),
		kong.Vars{"default_url": client.DefaultURL},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Exit(func(c int) { panic(kongExit(c)) }))
	if err != nil {
		fmt.Fprintln(std.err, "sbx:", err)
		return exitInfra
	}
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(kongExit)
			if !ok {
				panic(r)
			}
			code = int(c)
		}
	}()
	if len(args) == 0 {
		_, _ = parser.Parse([]string{"--help"})
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		return usageError(std, kctx, err)
	}
	cmd, ok := kctx.Selected().Target.Addr().Interface().(runner)
	if !ok {
		return usageError(std, kctx, errors.New("no command given"))
	}
	return cmd.run(&env{ctx: ctx, std: std, root: root, model: parser.Model, name: cmdPath(kctx.Selected())})
}

// usageError reports a command line kong could not parse (exit 2).
func usageError(std stdio, kctx *kong.Context, err error) int {
	fmt.Fprintln(std.err, "sbx:", err)
	path := "sbx"
	if n := lastCommand(kctx, err); n != nil {
		path = "sbx " + cmdPath(n)
	}
	fmt.Fprintf(std.err, "Run '%s --help' for usage.\n", path)
	return exitUsage
}

// lastCommand is the deepest command kong reached, also when a flag of it
// failed to parse (err's context); nil if none.
func lastCommand(kctx *kong.Context, err error) *kong.Node {
	var pe *kong.ParseError
	if kctx == nil && errors.As(err, &pe) {
		kctx = pe.Context // Parse returns its context only in the error
	}
	if kctx == nil {
		return nil
	}
	if n := kctx.Selected(); n != nil {
		return n
	}
	var last *kong.Node
	for _, p := range kctx.Path {
		if p.Command != nil {
			last = p.Command
		}
	}
	return last
}

// cmdPath is the command names from the root to n, e.g. "template ls".
func cmdPath(n *kong.Node) string {
	var names []string
	for ; n != nil && n.Parent != nil; n = n.Parent {
		if n.Type == kong.CommandNode {
			names = append([]string{n.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}
