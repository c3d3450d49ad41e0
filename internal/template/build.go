package template

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// setupScript runs in the new rootfs (chroot) after packages are installed.
const setupScript = `set -e
groupadd -g 1000 user 2>/dev/null || true
id user >/dev/null 2>&1 || useradd -m -u 1000 -g 1000 -s /bin/bash user
echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' > /etc/sudoers.d/user && chmod 0440 /etc/sudoers.d/user
echo 'e2b.local' > /etc/hostname
printf '127.0.0.1 localhost e2b.local\n::1 localhost\n' > /etc/hosts
printf 'nameserver 127.0.0.1\n' > /etc/resolv.conf
mkdir -p /.sbx && chmod 0755 /.sbx
apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
`

// Build builds the template name unless it exists, logging progress to log.
func (s *Store) Build(ctx context.Context, name string, log io.Writer) (*Template, error) {
	if t, err := s.Get(name); err == nil {
		return t, nil
	}
	def, ok := Definitions[name]
	if !ok {
		return nil, fmt.Errorf("%w: no definition for %q (have base, code-interpreter-v1)", ErrNotFound, name)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	s.removeStale()
	tmp := filepath.Join(s.Dir, ".build-"+name+"-"+randHex())
	if err := s.build(ctx, def, tmp, log); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("build template %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(s.Dir, name)); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return s.Get(name)
}

// removeStale deletes leftovers of interrupted builds.
func (s *Store) removeStale() {
	ents, _ := os.ReadDir(s.Dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".build-") {
			os.RemoveAll(filepath.Join(s.Dir, e.Name()))
		}
	}
}

func (s *Store) build(ctx context.Context, def Definition, dir string, log io.Writer) error {
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	if err := s.bootstrap(ctx, def, rootfs, log); err != nil {
		return err
	}
	fmt.Fprintf(log, "bootstrapped in %s\n", time.Since(start).Round(time.Second))
	if err := chrootRun(ctx, rootfs, log, aptScript(def.Apt)+setupScript); err != nil {
		return err
	}
	fmt.Fprintln(log, "shifting ownership for user-namespaced runtimes")
	if err := ShiftCopy(ctx, rootfs, filepath.Join(dir, "rootfs-userns"), s.UIDBase); err != nil {
		return err
	}
	return s.writeMeta(dir, def, rootfs)
}

func (s *Store) bootstrap(ctx context.Context, def Definition, rootfs string, log io.Writer) error {
	if s.Seed != "" {
		fmt.Fprintf(log, "copying seed tree %s\n", s.Seed)
		return run(ctx, log, "cp", "-a", s.Seed+"/.", rootfs)
	}
	mirror := s.Mirror
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	fmt.Fprintf(log, "debootstrap bookworm from %s (about a minute)\n", mirror)
	return run(ctx, log, "debootstrap", "--variant=minbase", "--include="+strings.Join(def.Base, ","), "bookworm", rootfs, mirror)
}

func aptScript(pkgs []string) string {
	if len(pkgs) == 0 {
		return ""
	}
	return "export DEBIAN_FRONTEND=noninteractive\napt-get update -qq\napt-get install -y -qq --no-install-recommends " +
		strings.Join(pkgs, " ") + "\n"
}

// chrootRun runs script in rootfs with /proc, /dev and the host's resolver.
func chrootRun(ctx context.Context, rootfs string, log io.Writer, script string) error {
	resolv, _ := os.ReadFile("/etc/resolv.conf")
	_ = os.WriteFile(filepath.Join(rootfs, "etc/resolv.conf"), resolv, 0o644)
	wrapped := fmt.Sprintf(`set -e
mount -t proc proc %[1]s/proc
mount --rbind /dev %[1]s/dev
trap 'umount -R %[1]s/dev; umount %[1]s/proc' EXIT
chroot %[1]s /bin/bash -c "$0"
`, rootfs)
	return run(ctx, log, "unshare", "--mount", "--propagation", "private", "bash", "-c", wrapped, script)
}

func run(ctx context.Context, log io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (s *Store) writeMeta(dir string, def Definition, rootfs string) error {
	size, _ := dirSize(rootfs)
	t := Template{Name: def.Name, Created: time.Now().UTC(), SizeBytes: size, UIDBase: s.UIDBase,
		Packages: append(append([]string{}, def.Base...), def.Apt...)}
	b, _ := json.MarshalIndent(t, "", "  ")
	return os.WriteFile(filepath.Join(dir, metaFile), b, 0o644)
}

func dirSize(root string) (int64, error) {
	var n int64
	err := filepath.Walk(root, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

func randHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
