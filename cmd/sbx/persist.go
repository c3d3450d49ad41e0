package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// pauseCmd is `sbx pause [--files-only] ID...`.
type pauseCmd struct {
	FilesOnly bool     `help:"keep the files only: the processes restart on resume (crun, runc)"`
	IDs       []string `arg:"" optional:"" name:"id" help:"sandboxes to pause"`
}

// Help is the long help of sbx pause.
func (*pauseCmd) Help() string {
	return "Saves sandboxes (memory and files on runsc) and frees their CPU, memory and network.\n" +
		"Resume with `sbx resume`. Exits 1 if any could not be paused."
}

func (p *pauseCmd) run(e *env) int {
	return eachID(e, p.IDs, func(ctx context.Context, c *client.Client, id string) error {
		return c.Pause(ctx, id, !p.FilesOnly)
	})
}

// resumeCmd is `sbx resume [--timeout D] ID...`.
type resumeCmd struct {
	Timeout time.Duration `default:"5m" help:"time to live from now"`
	IDs     []string      `arg:"" optional:"" name:"id" help:"sandboxes to resume"`
}

// Help is the long help of sbx resume.
func (*resumeCmd) Help() string {
	return "Resumes paused sandboxes (running ones get their timeout extended)."
}

func (r *resumeCmd) run(e *env) int {
	return eachID(e, r.IDs, func(ctx context.Context, c *client.Client, id string) error {
		_, err := c.Connect(ctx, id, r.Timeout)
		return err
	})
}

// forkCmd is `sbx fork [-n N] [--timeout D] ID`: it prints one child id per
// line.
type forkCmd struct {
	N       int           `short:"n" default:"1" help:"number of copies (1-16)"`
	Timeout time.Duration `default:"5m" help:"time to live of each copy"`
	ID      string        `arg:"" name:"id" help:"the running runsc sandbox to copy"`
}

// Help is the long help of sbx fork.
func (*forkCmd) Help() string {
	return "Starts live copies (memory and files) of a running runsc sandbox and prints their ids."
}

func (f *forkCmd) run(e *env) int {
	if f.N < 1 || f.N > 16 {
		e.errorf("-n %d: want 1 to 16 copies", f.N)
		return exitUsage
	}
	c, code := e.client()
	if c == nil {
		return code
	}
	kids, err := c.Fork(e.ctx, f.ID, f.N, f.Timeout)
	if errors.Is(err, client.ErrNotFound) {
		e.errorf("%s: no such sandbox", f.ID)
		return 1
	}
	if err != nil {
		e.errorf("%s: %v", f.ID, err)
		return 1
	}
	for _, k := range kids {
		if k.Sandbox == nil {
			e.errorf("a copy failed: %d %s", k.Error.Code, k.Error.Message)
			code = 1
			continue
		}
		fmt.Fprintln(e.std.out, cellText(k.Sandbox.SandboxID))
	}
	return code
}

// eachID runs fn on every id, printing the ids that succeeded; it exits 1
// if any failed.
func eachID(e *env, ids []string, fn func(context.Context, *client.Client, string) error) int {
	if len(ids) == 0 {
		e.errorf("no sandbox ID given")
		return exitUsage
	}
	c, code := e.client()
	if c == nil {
		return code
	}
	for _, id := range ids {
		switch err := fn(e.ctx, c, id); {
		case errors.Is(err, client.ErrNotFound):
			e.errorf("%s: no such sandbox", id)
			code = 1
		case err != nil:
			e.errorf("%s: %v", id, err)
			code = 1
		default:
			fmt.Fprintln(e.std.out, id)
		}
	}
	return code
}
