package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// runPause implements `sbx pause [--files-only] ID...`.
func runPause(ctx context.Context, args []string, std stdio) int {
	var cf clientFlags
	fs := newFlagSet("pause", "sbx pause [flags] ID...\n\nSaves sandboxes (memory and files on runsc) and frees their CPU, memory and network.\nResume with `sbx resume`. Exits 1 if any could not be paused.", std, &cf)
	filesOnly := fs.Bool("files-only", false, "keep the files only: the processes restart on resume (crun, runc)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	return eachID(ctx, fs.Args(), "pause", cf, std, func(ctx context.Context, c *client.Client, id string) error {
		return c.Pause(ctx, id, !*filesOnly)
	})
}

// runResume implements `sbx resume [--timeout D] ID...`.
func runResume(ctx context.Context, args []string, std stdio) int {
	var cf clientFlags
	fs := newFlagSet("resume", "sbx resume [flags] ID...\n\nResumes paused sandboxes (running ones get their timeout extended).", std, &cf)
	timeout := fs.Duration("timeout", 5*time.Minute, "time to live from now")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	return eachID(ctx, fs.Args(), "resume", cf, std, func(ctx context.Context, c *client.Client, id string) error {
		_, err := c.Connect(ctx, id, *timeout)
		return err
	})
}

// runFork implements `sbx fork [-n N] [--timeout D] ID`: it prints one
// child id per line.
func runFork(ctx context.Context, args []string, std stdio) int {
	var cf clientFlags
	fs := newFlagSet("fork", "sbx fork [flags] ID\n\nStarts live copies (memory and files) of a running runsc sandbox and prints their ids.", std, &cf)
	n := fs.Int("n", 1, "number of copies (1-16)")
	timeout := fs.Duration("timeout", 5*time.Minute, "time to live of each copy")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(std.err, "sbx fork: give exactly one sandbox ID")
		return exitUsage
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintln(std.err, "sbx fork:", err)
		return exitUsage
	}
	kids, err := c.Fork(ctx, fs.Arg(0), *n, *timeout)
	if err != nil {
		fmt.Fprintln(std.err, "sbx fork:", err)
		return 1
	}
	code := 0
	for _, k := range kids {
		if k.Sandbox == nil {
			fmt.Fprintf(std.err, "sbx fork: a copy failed: %d %s\n", k.Error.Code, k.Error.Message)
			code = 1
			continue
		}
		fmt.Fprintln(std.out, k.Sandbox.SandboxID)
	}
	return code
}

// eachID runs fn on every id, printing the ids that succeeded; it exits 1
// if any failed.
func eachID(ctx context.Context, ids []string, name string, cf clientFlags, std stdio, fn func(context.Context, *client.Client, string) error) int {
	if len(ids) == 0 {
		fmt.Fprintf(std.err, "sbx %s: no sandbox ID given\n", name)
		return exitUsage
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintf(std.err, "sbx %s: %v\n", name, err)
		return exitUsage
	}
	code := 0
	for _, id := range ids {
		switch err := fn(ctx, c, id); {
		case errors.Is(err, client.ErrNotFound):
			fmt.Fprintf(std.err, "sbx %s: %s: no such sandbox\n", name, id)
			code = 1
		case err != nil:
			fmt.Fprintf(std.err, "sbx %s: %s: %v\n", name, id, err)
			code = 1
		default:
			fmt.Fprintln(std.out, id)
		}
	}
	return code
}
