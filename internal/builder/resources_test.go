package builder

import (
	"errors"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// TestTemplateResources: a build request's cpuCount/memoryMB are checked as
// E2B's API checks them (team.LimitResources: at least 1 CPU and 128 MiB,
// memory divisible by 2, within the maxima) and fill in from the defaults.
// Before, an odd memoryMB (513) was accepted where E2B answers 400.
func TestTemplateResources(t *testing.T) {
	d := sandbox.Resources{CPUCount: 2, MemoryMB: 512}
	mx := sandbox.Resources{CPUCount: 4, MemoryMB: 4096, DiskSizeMB: 8192}
	r, err := templateResources(BuildRequest{}, d, mx, 1024)
	if err != nil || r.CPUCount != 2 || r.MemoryMB != 512 || r.DiskSizeMB != 1024 {
		t.Fatalf("defaults: %+v %v", r, err)
	}
	r, err = templateResources(BuildRequest{CPUCount: 3, MemoryMB: 1024, MinFreeDiskMB: 99999}, d, mx, 1024)
	if err != nil || r.CPUCount != 3 || r.MemoryMB != 1024 || r.DiskSizeMB != 8192 {
		t.Fatalf("asked: %+v %v", r, err)
	}
	for _, c := range []struct {
		req  BuildRequest
		want string
	}{
		{BuildRequest{CPUCount: 5}, "cpuCount must be between 1 and 4"},
		{BuildRequest{CPUCount: -1}, "cpuCount must be between 1 and 4"},
		{BuildRequest{MemoryMB: 100}, "memoryMB must be between 128 and 4096"},
		{BuildRequest{MemoryMB: 4098}, "memoryMB must be between 128 and 4096"},
		{BuildRequest{MemoryMB: 513}, "memoryMB must be divisible by 2"},
	} {
		_, err := templateResources(c.req, d, mx, 1024)
		if !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalid %q", c.req, err, c.want)
		}
	}
}
