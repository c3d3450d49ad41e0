package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/dockerfile"
)

// A Dockerfile's FROM names an image, as Docker reads it, or an sbx
// template. As Docker's local images shadow a registry's, a reference with
// no registry host and no digest ("base", "my-app:v1", "ns/name") is the
// sbx template of that name when the caller can use one (its own, a
// public one, a built-in: GET /templates/aliases/{name}); then its tag, if
// any, must exist. Anything else is pulled: a reference with a registry
// host ("docker.io/library/base", "localhost:5000/x") always is.

// fromChoice records how the FROM of a build was read, for the hint on a
// failed base step.
type fromChoice struct {
	ref      string // the FROM as written (expanded)
	template bool   // read as an sbx template
}

// resolveFrom sets spec's FromTemplate instead of its FromImage when the
// FROM names an sbx template the caller can use (see above).
func resolveFrom(ctx context.Context, c *client.Client, spec *dockerfile.Spec, w io.Writer) (fromChoice, error) {
	ch := fromChoice{ref: spec.FromImage}
	name, ok := templateName(spec.FromImage)
	if !ok {
		return ch, nil
	}
	a, err := c.TemplateByAlias(ctx, name)
	switch {
	case errors.Is(err, client.ErrNotFound):
		return ch, nil
	case err != nil:
		return ch, fmt.Errorf("looking up FROM %s as an sbx template: %w", spec.FromImage, err)
	}
	ch.template = true
	spec.OnTemplate(ch.ref, a.User, a.Workdir)
	fmt.Fprintf(w, "FROM %s: building on the sbx template %s (FROM %s would pull the image); "+
		"steps run as root in / until USER and WORKDIR say otherwise, and the template keeps %s's user and workdir unless they do\n", ch.ref, name, hubRef(ch.ref), name)
	return ch, nil
}

// templateName is the template name ref would name (without its tag); ok
// is false for a reference that can only be an image: one with a digest
// or a registry host (a first component with '.' or ':', or localhost, as
// Docker reads it).
func templateName(ref string) (string, bool) {
	if ref == "" || strings.Contains(ref, "@") {
		return "", false
	}
	if first, _, ok := strings.Cut(ref, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return "", false
	}
	name, _, _ := strings.Cut(ref, ":")
	return name, name != ""
}

// hint says, after a build failed at its base step, how its FROM was read
// and what to write for the other reading.
func (ch fromChoice) hint() string {
	if ch.ref == "" {
		return ""
	}
	if ch.template {
		return fmt.Sprintf("FROM %s was read as the sbx template %s; to pull the image, write FROM %s (or its registry's address)", ch.ref, ch.ref, hubRef(ch.ref))
	}
	if _, ok := templateName(ch.ref); ok {
		return fmt.Sprintf("FROM %s is not an sbx template this key can use (sbx template ls lists them) and was pulled as an image", ch.ref)
	}
	return ""
}

// hubRef is ref, a reference without a registry host, spelled with Docker
// Hub's host: what a FROM must say to pull it where a template shadows it.
func hubRef(ref string) string {
	if strings.Contains(ref, "/") {
		return "docker.io/" + ref
	}
	return "docker.io/library/" + ref
}
