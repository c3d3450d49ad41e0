package oci

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// TestBundleLimits reads the memory limit and the disk quota from a
// bundle, and refuses one without a limit or with a bad quota.
func TestBundleLimits(t *testing.T) {
	const lim = `"linux":{"resources":{"memory":{"limit":134217728}}}`
	for _, c := range []struct {
		name, cfg    string
		memory, disk int64
		ok           bool
	}{
		{"limit only", `{` + lim + `}`, 128 << 20, 0, true},
		{"limit and disk", `{"annotations":{"` + diskAnnotation + `":"1073741824"},` + lim + `}`, 128 << 20, 1 << 30, true},
		{"no limit", `{"linux":{}}`, 0, 0, false},
		{"bad disk", `{"annotations":{"` + diskAnnotation + `":"lots"},` + lim + `}`, 0, 0, false},
		{"negative disk", `{"annotations":{"` + diskAnnotation + `":"-1"},` + lim + `}`, 0, 0, false},
		{"not json", `{`, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := t.TempDir()
			if err := os.WriteFile(filepath.Join(b, "config.json"), []byte(c.cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			mem, disk, err := bundleLimits(b)
			if (err == nil) != c.ok || mem != c.memory || disk != c.disk {
				t.Fatalf("bundleLimits = %d %d %v, want %d %d ok=%v", mem, disk, err, c.memory, c.disk, c.ok)
			}
		})
	}
}

// TestSpecCarriesDisk: the disk quota is in the config's annotations (read
// back by bundleLimits) and the memory limit stays the spec's.
func TestSpecCarriesDisk(t *testing.T) {
	for _, disk := range []int64{0, 1 << 30} {
		sp := buildSpec("runsc", runtime.Spec{ID: "x", Rootfs: "/r", Limits: runtime.Limits{MemoryBytes: 256 << 20, DiskBytes: disk}})
		b := t.TempDir()
		cfg, _ := json.Marshal(sp)
		if err := os.WriteFile(filepath.Join(b, "config.json"), cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		mem, got, err := bundleLimits(b)
		if err != nil || mem != 256<<20 || got != disk {
			t.Fatalf("disk %d: read back %d %d %v", disk, mem, got, err)
		}
	}
}
