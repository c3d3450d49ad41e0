#!/usr/bin/env bash
# Runs the code-interpreter end-to-end tests: starts the interpreter alone
# inside a chroot of a test rootfs (Debian + python3-ipykernel & co, R, a JDK, typescript, user
# `user`), in its own mount and PID namespaces but the host's network, on
# localhost:49999, and drives it with the official @e2b/code-interpreter SDK
# (E2B_DEBUG=true: the SDK talks straight to localhost:49999, no API).
#   test/e2e/interpreter/run.sh [test files...]
# SBX_CI_ROOTFS picks the rootfs (default /var/lib/sbx-cache/ci-rootfs); it
# is built from /var/lib/sbx-cache/base-rootfs when missing (needs apt).
# Must run as root. Tests get SBX_E2E_TOKEN (the access token).
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
rootfs=${SBX_CI_ROOTFS:-/var/lib/sbx-cache/ci-rootfs}
base=/var/lib/sbx-cache/base-rootfs
url=http://localhost:49999
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(test/e2e/interpreter.test.mjs)

[ "$(id -u)" = 0 ] || { echo "interpreter e2e: must run as root" >&2; exit 1; }
if [ ! -x "$rootfs/usr/bin/python3" ] || ! chroot "$rootfs" python3 -c 'import ipykernel, jupyter_client, pandas, matplotlib' 2>/dev/null ||
  [ ! -x "$rootfs/usr/bin/R" ] || [ ! -x "$rootfs/usr/bin/jshell" ] || [ ! -d "$rootfs/usr/share/nodejs/typescript" ]; then
  echo "interpreter e2e: preparing $rootfs" >&2
  [ -d "$rootfs" ] || cp -a "$base" "$rootfs"
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  mount -t proc proc "$rootfs/proc"; mount --bind /dev "$rootfs/dev"
  trap 'umount "$rootfs/proc" "$rootfs/dev"' EXIT
  chroot "$rootfs" apt-get update -q
  DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get install -y -q --no-install-recommends \
    python3-ipykernel python3-jupyter-client python3-numpy python3-pandas python3-matplotlib \
    r-base-core r-cran-irkernel openjdk-17-jdk-headless node-typescript # as code-interpreter-v1 (internal/template/defs.go)
  umount "$rootfs/proc" "$rootfs/dev"; trap - EXIT
fi
chroot "$rootfs" id user >/dev/null 2>&1 || chroot "$rootfs" useradd -m -u 1000 -s /bin/bash user
[ -d test/e2e/node_modules/@e2b/code-interpreter ] || (cd test/e2e && npm ci --no-audit --no-fund --silent)
if curl -fsS -o /dev/null "$url/health" 2>/dev/null; then
  echo "interpreter e2e: something already answers on $url" >&2
  exit 1
fi

bin=$rootfs/usr/local/bin/sbx-interpreter-test
CGO_ENABLED=0 go build -trimpath -o "$bin" ./test/e2e/interpreter/server
log=$(mktemp /tmp/sbx-interpreter-e2e-XXXXXX.log)
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
# A private mount namespace: /dev and /proc are mounted for the chroot only
# and vanish with it; PID 1 of the new PID namespace is the server.
SBX_TEST_TOKEN=$token unshare -m -p -f --kill-child=SIGTERM --propagation private sh -c "
  mount --bind /dev '$rootfs/dev' && mount -t proc proc '$rootfs/proc' &&
  exec chroot '$rootfs' /usr/local/bin/sbx-interpreter-test -prewarm" >"$log" 2>&1 &
pid=$!
cleanup() {
  # unshare ignores SIGTERM while it waits: signal the server (its child).
  kill $(pgrep -P "$pid") 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$log" "$bin"
}
trap cleanup EXIT
for _ in $(seq 200); do
  curl -fsS -o /dev/null "$url/health" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.05
done

export E2B_DEBUG=true SBX_E2E_TOKEN=$token
status=0
(cd test/e2e && node --test --test-concurrency=1 "${files[@]#test/e2e/}") || status=$?
if [ $status -ne 0 ]; then
  echo "---- interpreter log ----" >&2
  tail -n 80 "$log" >&2
fi
exit $status
