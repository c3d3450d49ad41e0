package builder

import (
	"fmt"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/template"
)

// absent is the error of a create from ref that resolved to nothing (err):
// a built-in template that a process on this host is building
// (template.Building: sbx template build, e.g. in scripts/up.sh's
// background on a first start) is unavailable for now — 503 with
// Retry-After at the API — rather than not found.
func (r *Registry) absent(ref string, err error) error {
	name, tag := splitRef(ref)
	if tag != "latest" || r.Builtins == nil || !template.Building(r.Builtins.Dir, name) {
		return err
	}
	return fmt.Errorf("%w: template %s is being built on this host (the first start builds it in the background, a few minutes); retry shortly", sandbox.ErrUnavailable, name)
}
