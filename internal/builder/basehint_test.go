package builder

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/template/oci"
)

// TestBaseImageHint: a pull of E2B's default base (the SDK's Template()
// and fromBaseImage()) that cannot reach Docker Hub says where sbx's
// counterpart is; other images and other failures are left as they are.
func TestBaseImageHint(t *testing.T) {
	unreachable := fmt.Errorf("pull x: cannot reach registry: %w", oci.ErrUnreachable)
	for _, ref := range []string{"e2bdev/base", "e2bdev/base:latest", "docker.io/e2bdev/base:1", "index.docker.io/e2bdev/base@sha256:ab"} {
		err := baseImageHint(ref, unreachable)
		if !errors.Is(err, oci.ErrUnreachable) || !strings.Contains(err.Error(), "fromTemplate('base')") {
			t.Errorf("%s: %v", ref, err)
		}
	}
	for _, ref := range []string{"e2bdev/base-other", "ghcr.io/e2bdev/base", "debian", "myreg:5000/e2bdev/base"} {
		if err := baseImageHint(ref, unreachable); err != unreachable {
			t.Errorf("%s: %v", ref, err)
		}
	}
	notFound := errors.New("manifest unknown")
	if err := baseImageHint("e2bdev/base", notFound); err != notFound {
		t.Errorf("not found: %v", err)
	}
	if baseImageHint("e2bdev/base", nil) != nil {
		t.Error("nil error")
	}
}
