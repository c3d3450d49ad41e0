#!/usr/bin/env bash
# Every TTI and capacity figure of docs/BENCHMARKS.md in one run: the
# bare-runtime baselines, then a throwaway `sbx serve` per configuration
# (no pool, pool of 10, pool of 4 for the SDK, crun and runsc) driven by
# `sbx bench` and test/e2e/bench/tti.mjs. Needs root, bin/ built and the base
# template installed (scripts/install.sh). Takes about 3 minutes.
#   test/e2e/bench/all.sh [bursts]    # bursts: runs of the 100-at-once burst (default 5)
set -uo pipefail
cd "$(dirname "$0")/../../.."
bursts=${1:-5}
export PATH=/opt/sbx/bin:$PATH SBX_API_KEY=bench-$$ SBX_URL=http://127.0.0.1:3980
templates=${SBX_TEMPLATES_DIR:-/var/lib/sbx/templates}
data=$(mktemp -d /tmp/sbx-bench-XXXXXX)
chmod 0711 "$data"
stop() {
  pkill -f "sbx serve --data-dir $data" 2>/dev/null; sleep 1
  nft delete table inet sbb 2>/dev/null
  umount -l "$data/run/runtime/runsc/null-netns" 2>/dev/null; umount -l "$data/run" 2>/dev/null
  rm -rf "${data:?}"/* 2>/dev/null
}
trap 'stop; rm -rf "$data"' EXIT
start() { # start RUNTIME [serve flags]
  stop
  local rt=$1; shift
  bin/sbx serve --data-dir "$data" --templates-dir "$templates" --listen 127.0.0.1:3980 --net-prefix sbb \
    --subnet 10.231.0.0/16 --uplink none --runtime "$rt" --log-level warn "$@" >"$data.log" 2>&1 &
  for _ in $(seq 100); do curl -sf "$SBX_URL/health" >/dev/null && break; sleep 0.1; done
  sleep 3 # pools fill
}
b() { echo "== sbx bench $*"; bin/sbx bench "$@"; }
echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null)"
for rt in crun runc runsc; do test/e2e/bench/raw.sh "$rt" 20; done
for rt in crun runsc; do start "$rt"; b --runtime "$rt" --n 20 --burst 0 --rtt 50 --idle 0; done
start crun
b --runtime crun --n 0 --stagger 100 --every 50ms --burst 0 --rtt 0 --idle 0 | grep staggered
for _ in 1 2 3; do sleep 5; b --runtime crun --n 0 --burst 100 --rtt 0 --idle 0 | grep burst; done
start crun --pool base:crun=10
b --runtime crun --n 20 --burst 0 --rtt 0 --idle 0
for _ in $(seq "$bursts"); do sleep 5; b --runtime crun --n 0 --burst 100 --rtt 0 --idle 0 | grep burst; done
start crun --pool base:crun=4
echo "== node test/e2e/bench/tti.mjs 30 (pool of 4)"
(cd test/e2e && E2B_API_URL=$SBX_URL E2B_SANDBOX_URL=$SBX_URL E2B_API_KEY=$SBX_API_KEY node bench/tti.mjs 30)
start crun; b --runtime crun --n 0 --burst 0 --rtt 0 --idle 500 | tail -2
start runsc; b --runtime runsc --n 0 --burst 0 --rtt 0 --idle 50 | tail -2
echo "== done $(date -u +%FT%TZ)"
