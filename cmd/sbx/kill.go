package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/sbx-dev/sbx/client"
)

// runKill implements `sbx kill ID...`: it removes each sandbox and exits 1
// if any could not be removed.
func runKill(ctx context.Context, args []string, std stdio) int {
	var cf clientFlags
	fs := newFlagSet("kill", "sbx kill [flags] ID...\n\nRemoves sandboxes. Exits 1 if any was not found or not removed.", std, &cf)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(std.err, "sbx kill: no sandbox ID given")
		fs.Usage()
		return exitUsage
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintln(std.err, "sbx kill:", err)
		return exitUsage
	}
	code := 0
	for _, id := range fs.Args() {
		switch err := c.Kill(ctx, id); {
		case errors.Is(err, client.ErrNotFound):
			fmt.Fprintf(std.err, "sbx kill: %s: no such sandbox\n", id)
			code = 1
		case err != nil:
			fmt.Fprintf(std.err, "sbx kill: %s: %v\n", id, err)
			code = 1
		default:
			fmt.Fprintln(std.out, id)
		}
	}
	return code
}
