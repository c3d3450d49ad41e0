package oci

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Files of the writable layer (runsc).
//
// A sandbox's writable layer is a host tmpfs sized to its disk quota
// (internal/layer), and the host charges a tmpfs page to the memory cgroup
// of the process that writes it. Under runsc that is the Sentry (directfs)
// or its gofer, never a guest process (a stub), so the sandbox's cgroup
// (on v1 the parent of the guest cgroup, on v2 the only one) allows the
// disk quota more than its memory: files fill the disk quota, not the
// memory limit, whose bound on the guest stays where it was (the guest
// cgroup and the Sentry's own limit count guest memory, not these pages).
// The quota travels in the bundle's config.json (diskAnnotation), which
// runsc ignores, so that a restarted daemon re-adopting the sandbox finds
// it; the spec's memory limit stays the guest's (runsc derives the
// Sentry's MemTotal and limit from it).
//
// crun and runc run the guest's processes themselves in the one cgroup
// that the tmpfs pages are charged to: there the files count against the
// memory limit (docs/SECURITY.md, known gaps).
const diskAnnotation = "dev.sbx.disk-bytes"

// bundleLimits reads the memory limit and disk quota (0 if none) of the
// bundle's config.json.
func bundleLimits(bundle string) (memory, disk int64, err error) {
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return 0, 0, fmt.Errorf("oci: %w", err)
	}
	var spec struct {
		Annotations map[string]string `json:"annotations"`
		Linux       struct {
			Resources struct {
				Memory struct {
					Limit int64 `json:"limit"`
				} `json:"memory"`
			} `json:"resources"`
		} `json:"linux"`
	}
	if err := json.Unmarshal(b, &spec); err != nil || spec.Linux.Resources.Memory.Limit <= 0 {
		return 0, 0, fmt.Errorf("oci: no memory limit in %s/config.json (%v)", bundle, err)
	}
	if v, ok := spec.Annotations[diskAnnotation]; ok {
		if disk, err = strconv.ParseInt(v, 10, 64); err != nil || disk < 0 {
			return 0, 0, fmt.Errorf("oci: bad %s %q in %s/config.json", diskAnnotation, v, bundle)
		}
	}
	return spec.Linux.Resources.Memory.Limit, disk, nil
}

// roomForFiles raises the memory.max of the runsc sandbox id on a pure
// cgroup v2 host (no guest cgroup there) by its disk quota, after runsc
// set it to the spec's limit. Idempotent (re-adoption).
func (r *Runtime) roomForFiles(id string) error {
	if r.kind != "runsc" || !r.v2 {
		return nil
	}
	memory, disk, err := bundleLimits(r.bundle(id))
	if err != nil || disk == 0 {
		return err
	}
	return writeCgroup(filepath.Join(cgroupRoot, "sbx", id), "memory.max", strconv.FormatInt(memory+disk, 10))
}
