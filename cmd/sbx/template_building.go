package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sbx-dev/sbx/internal/template"
)

// markBuilding takes the build lock of the built-in template name for the
// whole `sbx template build NAME` (see template.MarkBuilding): a daemon on
// the same templates dir answers creates of name 503 "being built" until the
// build ends. A name that is not a built-in passes through: the build
// reports it. On failure done is nil and code the exit code.
func markBuilding(ctx context.Context, o *templateOpts, name string) (done func(), code int) {
	if _, ok := template.Definitions[name]; !ok || os.Geteuid() != 0 {
		return func() {}, 0
	}
	dir := o.store().Dir
	if template.Building(dir, name) {
		fmt.Fprintf(os.Stderr, "sbx template build: another process is building %s; waiting for it\n", name)
	}
	done, err := template.MarkBuilding(ctx, dir, name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx template build:", err)
		return nil, 1
	}
	return done, 0
}
