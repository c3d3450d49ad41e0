package builder

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Debootstrap is the builder's Debian source, for hosts that reach no
// registry: a Debian tree made with debootstrap from a mirror, then the
// packages debootstrap cannot resolve installed with apt-get in that tree.
// Both run on the host as root, in a chroot of the tree being made (what
// debootstrap itself does), in their own mount and pid namespaces; nothing
// of the tree runs in a sandbox before it is a layer. The result is one
// layer keyed by suite, mirror and packages: a second build with the same
// ones takes it from the layer store.
type Debootstrap struct {
	Suite, Mirror string
	Include       []string // debootstrap --include: no virtual packages
	Apt           []string // apt-get install afterwards
	// Seed, if set, is a bootstrapped tree of Suite copied instead of
	// running debootstrap (tests, air-gapped hosts); packages it lacks are
	// installed with apt-get.
	Seed string
}

// debootstrapVersion is part of the source's cache key: bump it when the
// way the tree is made changes.
const debootstrapVersion = "debootstrap/v2"

// key is the layer key of d's tree.
func (d Debootstrap) key() string {
	return hashKey(debootstrapVersion, d.Suite, d.Mirror, strings.Join(d.Include, ","), strings.Join(d.Apt, ","), d.Seed)
}

// fill makes d's tree in dir (empty).
func (d Debootstrap) fill(ctx context.Context, dir string, log io.Writer) error {
	if d.Seed != "" {
		fmt.Fprintf(log, "    copying seed tree %s\n", d.Seed)
		if err := hostRun(ctx, log, "cp", "-a", "--", d.Seed+"/.", dir); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(log, "    debootstrap %s from %s (about a minute)\n", d.Suite, d.Mirror)
		if err := isolated(ctx, log, "debootstrap", "--variant=minbase", "--include="+strings.Join(d.Include, ","),
			d.Suite, dir, d.Mirror); err != nil {
			return err
		}
	}
	etc := filepath.Join(dir, "etc")
	sources := fmt.Sprintf("deb %s %s main\n", d.Mirror, d.Suite)
	if err := os.WriteFile(filepath.Join(etc, "apt", "sources.list"), []byte(sources), 0o644); err != nil {
		return err
	}
	resolv, err := os.ReadFile("/etc/resolv.conf") // apt's, while it runs; provisioning replaces it
	if err != nil {
		return err
	}
	if err := replaceFile(filepath.Join(etc, "resolv.conf"), resolv, 0o644); err != nil {
		return err
	}
	if err := chroot(ctx, log, dir, installScript(append(append([]string{}, d.Include...), d.Apt...))+debianSetup); err != nil {
		return err
	}
	return replaceFile(filepath.Join(etc, "resolv.conf"), []byte(resolvPlaceholder), 0o644) // not the host's in a layer
}

// installScript installs those of pkgs that are not installed yet, with no
// daemon started.
func installScript(pkgs []string) string {
	return `set -eu
export DEBIAN_FRONTEND=noninteractive
missing=""
for p in ` + strings.Join(pkgs, " ") + `; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "    apt-get install$missing"
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing
  rm -f /usr/sbin/policy-rc.d
fi
`
}

// debianSetup runs in the tree after the packages: the account `user`
// (uid 1000, home from /etc/skel, made by Debian's useradd, as images made
// for sandboxes have it), the locale, and no caches. Sudoers, hosts, the
// resolver and /.sbx are the provisioning layer's, as for any image.
const debianSetup = `set -eu
getent group user >/dev/null || groupadd -g 1000 user
id user >/dev/null 2>&1 || useradd -m -u 1000 -g 1000 -s /bin/bash -d /home/user user
echo 'LANG=C.UTF-8' > /etc/default/locale
echo 'export LANG="${LANG:-C.UTF-8}"' > /etc/profile.d/00-sbx-locale.sh
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt/* \
  /var/log/*.log /tmp/* /var/tmp/* /root/.cache
`

// replaceFile writes path anew (a symlink there is replaced, not followed).
func replaceFile(path string, data []byte, mode os.FileMode) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, data, mode)
}
