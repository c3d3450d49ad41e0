#!/usr/bin/env bash
# The raw-runtime baselines for docs/BENCHMARKS.md, in the base template's
# rootfs with the bare runtime (no network setup, no agent, no sbx), N times:
#  - `<rt> run` of /bin/true (default spec): a bare start, p50/p95 in ms;
#  - the runtime's floor (`sbx bench --floor-only`): inside one bare `<rt> run`,
#    `bash -l -c true` started from a shell already running there, as the
#    template's user: what a sandbox's first command costs at the least.
# Run it in the same session as `sbx bench` (which measures the floor itself
# too) so the ratios mean something. Needs bin/sbx built.
#   test/e2e/bench/raw.sh <crun|runc|runsc> [N]
set -euo pipefail
rt=${1:?runtime}; n=${2:-20}
sbx=$(cd "$(dirname "$0")/../../.." && pwd)/bin/sbx
rootfs=${SBX_DATA_DIR:-/var/lib/sbx}/templates/base/rootfs
[ -d "$rootfs" ] || { echo "no base template at $rootfs" >&2; exit 1; }
dir=$(mktemp -d /tmp/sbx-raw-XXXXXX)
trap 'umount -l "$dir/state/null-netns" 2>/dev/null || true; rm -rf "$dir"' EXIT # runsc keeps a null netns mounted
cd "$dir"
"$rt" spec >/dev/null 2>&1 || true
[ -f config.json ] || crun spec
python3 - "$rootfs" <<'PY'
import json, sys
c = json.load(open('config.json'))
c['root'] = {'path': sys.argv[1], 'readonly': True}
c['process']['args'] = ['/bin/true']
c['process']['terminal'] = False
json.dump(c, open('config.json', 'w'))
PY
cmd=("$rt")
[ "$rt" = runsc ] && cmd+=(--root "$dir/state" --platform systrap --network none)
# crun refuses hybrid cgroup hosts; run it as sbx does there: in a private
# mount namespace without the cgroup2 mount.
if [ "$rt" = crun ] && [ -d /sys/fs/cgroup/unified ] && mountpoint -q /sys/fs/cgroup/unified; then
  cmd=(unshare --mount --propagation slave sh -c 'umount -l /sys/fs/cgroup/unified; exec "$0" "$@"' crun)
fi
times=()
for i in $(seq "$n"); do
  t0=$(date +%s%N)
  "${cmd[@]}" run "raw-$$-$i" </dev/null >/dev/null
  t1=$(date +%s%N)
  times+=($(((t1 - t0) / 1000)))
done
printf '%s\n' "${times[@]}" | sort -n | awk -v rt="$rt" '{a[NR]=$1} END {
  p50=a[int((NR-1)*0.5)+1]; p95=a[int((NR-1)*0.95)+1]
  printf "raw %s run of /bin/true: n=%d p50 %.1f ms p95 %.1f ms\n", rt, NR, p50/1000, p95/1000 }'
SBX_DATA_DIR=${SBX_DATA_DIR:-/var/lib/sbx} "$sbx" bench --floor-only --runtime "$rt" --floor "$n" \
  --floor-rootfs "$rootfs" | grep '^floor'
