package template

import (
	"os"
	"path/filepath"
	"strings"
)

// installScript installs those of pkgs that are not installed yet (all of
// def.Apt; def.Base too when the seed lacks some), with no daemon started.
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

// setupScript runs in the chroot after the packages are installed: the E2B
// user, passwordless sudo, locale, hostname, and no caches.
const setupScript = `set -eu
getent group user >/dev/null || groupadd -g 1000 user
id user >/dev/null 2>&1 || useradd -m -u 1000 -g 1000 -s /bin/bash -d /home/user user
echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' > /etc/sudoers.d/user
chmod 0440 /etc/sudoers.d/user
visudo -c -q
echo 'LANG=C.UTF-8' > /etc/default/locale
echo 'export LANG="${LANG:-C.UTF-8}"' > /etc/profile.d/00-sbx-locale.sh
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt/* \
  /var/log/*.log /tmp/* /var/tmp/* /root/.cache
`

// finishFiles are written (from the host) after provisioning. resolv.conf is
// a placeholder with public resolvers: the daemon or its network layer may
// bind the sandbox's own resolver over it.
var finishFiles = []struct {
	path, data string
	mode       os.FileMode
}{
	{"etc/hostname", "e2b.local\n", 0o644},
	{"etc/hosts", "127.0.0.1\tlocalhost\n127.0.1.1\te2b.local e2b\n::1\tlocalhost ip6-localhost ip6-loopback\n", 0o644},
	{"etc/resolv.conf", "# placeholder: sbx may bind the sandbox's resolver over this file\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n", 0o644},
}

// finish writes finishFiles and makes /.sbx, the agent's mount point.
func finish(rootfs string) error {
	for _, f := range finishFiles {
		if err := replaceFile(filepath.Join(rootfs, f.path), []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	if err := os.Mkdir(filepath.Join(rootfs, ".sbx"), 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	return os.Chmod(filepath.Join(rootfs, ".sbx"), 0o755)
}
