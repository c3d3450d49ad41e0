package template

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// build makes dir/rootfs, dir/rootfs-userns and dir/template.json for def.
func (s *Store) build(ctx context.Context, def Definition, dir string, log io.Writer) error {
	rootfs := filepath.Join(dir, "rootfs")
	steps := []struct {
		what string
		do   func() error
	}{
		{"bootstrap", func() error { return s.bootstrap(ctx, def, rootfs, log) }},
		{"provision", func() error { return s.provision(ctx, def, rootfs, log) }},
		{"finish", func() error { return finish(rootfs) }},
		{"shift ownership (rootfs-userns)", func() error {
			return ShiftCopy(ctx, rootfs, filepath.Join(dir, "rootfs-userns"), s.UIDBase)
		}},
		{"metadata", func() error { return s.writeMeta(def, dir) }},
	}
	for _, st := range steps {
		start := time.Now()
		fmt.Fprintf(log, "==> %s\n", st.what)
		if err := st.do(); err != nil {
			return fmt.Errorf("%s: %w", st.what, err)
		}
		fmt.Fprintf(log, "    %s done in %s\n", st.what, time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

// bootstrap makes a minimal bookworm tree with def.Base at rootfs: a copy of
// Seed if set, else debootstrap from the mirror.
func (s *Store) bootstrap(ctx context.Context, def Definition, rootfs string, log io.Writer) error {
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return err
	}
	if s.Seed != "" {
		fmt.Fprintf(log, "    copying seed tree %s\n", s.Seed)
		return run(ctx, log, "cp", "-a", "--", s.Seed+"/.", rootfs)
	}
	fmt.Fprintf(log, "    debootstrap bookworm from %s (about a minute)\n", s.mirror())
	return isolated(ctx, log, "debootstrap", "--variant=minbase", "--include="+strings.Join(def.Base, ","),
		"bookworm", rootfs, s.mirror())
}

func (s *Store) mirror() string {
	if s.Mirror == "" {
		return DefaultMirror
	}
	return s.Mirror
}

// provision installs what the tree lacks of def's packages and sets it up
// (users, sudo, locale, hostname), in a chroot with the host's resolver.
func (s *Store) provision(ctx context.Context, def Definition, rootfs string, log io.Writer) error {
	etc := filepath.Join(rootfs, "etc")
	sources := fmt.Sprintf("deb %s bookworm main\n", s.mirror())
	if err := os.WriteFile(filepath.Join(etc, "apt", "sources.list"), []byte(sources), 0o644); err != nil {
		return err
	}
	resolv, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return err
	}
	if err := replaceFile(filepath.Join(etc, "resolv.conf"), resolv, 0o644); err != nil {
		return err
	}
	return chroot(ctx, log, rootfs, installScript(def.packages())+setupScript)
}

// replaceFile writes path anew (a symlink there is replaced, not followed).
func replaceFile(path string, data []byte, mode os.FileMode) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, data, mode)
}
