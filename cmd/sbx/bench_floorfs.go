package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// templateStack returns the rootfs a template's sandboxes see when rootfs
// is an installed template's "rootfs" link (its bottom layer only) and the
// template has more layers (the provisioning layer: sbx's /etc/profile,
// the user's account): a read-only overlay of them all mounted under dir,
// with the function that unmounts it. Any other rootfs is used as it is.
func templateStack(rootfs, dir string) (string, func(), error) {
	none := func() {}
	tdir := filepath.Dir(rootfs)
	b, err := os.ReadFile(filepath.Join(tdir, "template.json"))
	if filepath.Base(rootfs) != "rootfs" || err != nil {
		return rootfs, none, nil
	}
	var t struct{ Layers []string }
	if err := json.Unmarshal(b, &t); err != nil || len(t.Layers) < 2 {
		return rootfs, none, nil
	}
	lower := make([]string, 0, len(t.Layers))
	for i := len(t.Layers) - 1; i >= 0; i-- { // topmost first
		lower = append(lower, filepath.Join(tdir, "..", "layers", t.Layers[i], "r", "fs"))
	}
	target := filepath.Join(dir, "stack")
	if err := os.Mkdir(target, 0o755); err != nil {
		return "", none, err
	}
	if err := unix.Mount("overlay", target, "overlay", unix.MS_RDONLY, "lowerdir="+strings.Join(lower, ":")); err != nil {
		return "", none, fmt.Errorf("floor: overlay of the template's layers: %w", err)
	}
	return target, func() { _ = unix.Unmount(target, unix.MNT_DETACH) }, nil
}
