// Command sbx is the sbx daemon (sbx serve) and its command-line client.
// Client commands are plain clients of the HTTP API (package client).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand: run gets the arguments after its name and
// returns the process exit code.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) int
}

// commands is the table of subcommands; each run function lives in a file of
// its own (serve.go, run.go, ...). Add new commands here.
var commands = map[string]command{
	"serve":    {"run the sbx daemon (API + sandbox traffic)", runServe},
	"template": {"build or list templates (on the daemon's host, as root)", runTemplate},
	"audit":    {"print or verify the audit log (on the daemon's host)", runAudit},
	"mcp":      {"serve sbx sandboxes as MCP tools over stdio", runMCP},
	"bench":    {"benchmark a running daemon (TTI, bursts, round trips)", runBench},
	"run":      {"run a command in a new sandbox and remove it", func(ctx context.Context, args []string) int { return runRun(ctx, args, osStdio()) }},
	"ls":       {"list sandboxes", func(ctx context.Context, args []string) int { return runLs(ctx, args, osStdio()) }},
	"kill":     {"remove sandboxes", func(ctx context.Context, args []string) int { return runKill(ctx, args, osStdio()) }},
	"pause":    {"pause sandboxes (memory and files on runsc)", func(ctx context.Context, args []string) int { return runPause(ctx, args, osStdio()) }},
	"resume":   {"resume paused sandboxes", func(ctx context.Context, args []string) int { return runResume(ctx, args, osStdio()) }},
	"fork":     {"start live copies of a running sandbox", func(ctx context.Context, args []string) int { return runFork(ctx, args, osStdio()) }},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "sbx: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	os.Exit(cmd.run(ctx, os.Args[2:]))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: sbx <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'sbx <command> --help' for the flags of a command.")
}
