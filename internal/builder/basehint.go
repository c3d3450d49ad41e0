package builder

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sbx-dev/sbx/internal/template/oci"
)

// e2bBaseImage is the image the SDK's Template() starts from when no base
// is given, and what its fromBaseImage() names: Docker Hub's.
const e2bBaseImage = "e2bdev/base"

// baseImageHint adds to err, a failed pull of ref, where a team on a host
// that cannot reach Docker Hub finds E2B's base: sbx's built-in base
// template. Other errors and refs are returned as they are.
func baseImageHint(ref string, err error) error {
	if err == nil || !errors.Is(err, oci.ErrUnreachable) || !isE2BBase(ref) {
		return err
	}
	return fmt.Errorf("%w (Template() with no base and fromBaseImage() pull Docker Hub's %s; without Docker Hub build on sbx's built-in counterpart: Template().fromTemplate('base'))", err, e2bBaseImage)
}

// isE2BBase reports whether ref names Docker Hub's e2bdev/base, at any tag.
func isE2BBase(ref string) bool {
	for _, p := range []string{"docker.io/", "index.docker.io/", "registry-1.docker.io/"} {
		ref = strings.TrimPrefix(ref, p)
	}
	name, _, _ := strings.Cut(ref, "@")
	name, _, _ = strings.Cut(name, ":")
	return name == e2bBaseImage
}
