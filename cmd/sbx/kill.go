package main

import (
	"context"

	"github.com/sbx-dev/sbx/client"
)

// killCmd is `sbx kill ID...`: it removes each sandbox and exits 1 if any
// could not be removed.
type killCmd struct {
	IDs []string `arg:"" optional:"" name:"id" help:"sandboxes to remove"`
}

// Help is the long help of sbx kill.
func (*killCmd) Help() string {
	return "Removes sandboxes. Exits 1 if any was not found or not removed."
}

func (k *killCmd) run(e *env) int {
	return eachID(e, k.IDs, func(ctx context.Context, c *client.Client, id string) error {
		return c.Kill(ctx, id)
	})
}
