#!/usr/bin/env bash
# Every TTI and capacity figure of docs/BENCHMARKS.md in one run: the
# bare-runtime baselines and floors, then a throwaway `sbx serve` per
# configuration (no pool, pool of 10, pool of 4 for the SDK, crun and runsc)
# driven by `sbx bench` and test/e2e/bench/tti.mjs (both measure the
# runtime's floor again in the same run and give every figure's ratio to it). Needs root, bin/ built and the base
# template installed (scripts/install.sh). Takes about 3 minutes, plus the
# template phase: test/e2e/bench/template.mjs (builds from the loopback test
# registry, rebuilds, TTI custom vs base) on crun and on runsc, each daemon with
# a fresh templates dir (base linked in), so its first build pulls the image.
#   test/e2e/bench/all.sh [bursts]    # bursts: runs of the 100-at-once burst (default 5)
# SBX_BENCH_ONLY=templates runs only the template phase, SBX_BENCH_ONLY=tti all
# but it; SBX_BENCH_PORT (default 3980) is the daemons' port, SBX_BENCH_REGISTRY
# (default 127.0.0.1:5077) the registry's.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bursts=${1:-5}
port=${SBX_BENCH_PORT:-3980} only=${SBX_BENCH_ONLY:-}
export PATH=/opt/sbx/bin:$PATH SBX_API_KEY=bench-$$ SBX_URL=http://127.0.0.1:$port
templates=${SBX_TEMPLATES_DIR:-/var/lib/sbx/templates}
shared_templates=$templates
data=$(mktemp -d /tmp/sbx-bench-XXXXXX)
chmod 0711 "$data"
stop() {
  pkill -f "sbx serve --data-dir $data" 2>/dev/null
  # the next daemon needs the data dir's lock: wait for this one to exit
  for _ in $(seq 300); do pgrep -f "sbx serve --data-dir $data" >/dev/null || break; sleep 0.1; done
  nft delete table inet sbb 2>/dev/null
  umount -l "$data/run/runtime/runsc/null-netns" 2>/dev/null; umount -l "$data/run" 2>/dev/null
  rm -rf "${data:?}"/* "$data.anchor" 2>/dev/null
}
reg_pid= tpl=
trap 'stop; rm -rf "$data" "$data.anchor"; rm -f "$data.reg"; [ -z "$reg_pid" ] || kill "$reg_pid"; [ -z "$tpl" ] || rm -rf "$tpl"' EXIT
start() { # start RUNTIME [serve flags]
  stop
  local rt=$1; shift
  # each start is a fresh daemon on a reused path: its audit anchor goes with it
  bin/sbx serve --data-dir "$data" --audit-anchor-dir "$data.anchor" --templates-dir "$templates" --listen 127.0.0.1:$port --net-prefix sbb \
    --subnet 10.231.0.0/16 --uplink none --runtime "$rt" --log-level warn "$@" >"$data.log" 2>&1 &
  for _ in $(seq 100); do curl -sf "$SBX_URL/health" >/dev/null && break; sleep 0.1; done
  sleep 3 # pools fill
}
b() { echo "== sbx bench $*"; bin/sbx bench "$@"; }
echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null)"
if [ "$only" != templates ]; then
for rt in crun runc runsc; do test/e2e/bench/raw.sh "$rt" 20; done
for rt in crun runsc; do start "$rt"; b --runtime "$rt" --n 20 --burst 0 --rtt 50 --idle 0; done
start crun
b --runtime crun --n 0 --stagger 100 --every 50ms --burst 0 --rtt 0 --idle 0 | grep staggered
for _ in 1 2 3; do sleep 5; b --runtime crun --n 0 --burst 100 --rtt 0 --idle 0 | grep burst; done
start crun --pool base:crun=10
b --runtime crun --n 20 --burst 0 --rtt 0 --idle 0
for _ in $(seq "$bursts"); do sleep 5; b --runtime crun --n 0 --burst 100 --rtt 0 --idle 0 | grep burst; done
start runsc --pool base:runsc=10
b --runtime runsc --n 20 --burst 0 --rtt 50 --idle 0
for _ in $(seq "$bursts"); do sleep 5; b --runtime runsc --n 0 --burst 20 --rtt 0 --idle 0 --floor 0 | grep burst; done
for rt in crun runsc; do
  start "$rt" --pool base:$rt=4
  echo "== node test/e2e/bench/tti.mjs 30 ($rt, pool of 4)"
  (cd test/e2e && E2B_API_URL=$SBX_URL E2B_SANDBOX_URL=$SBX_URL E2B_API_KEY=$SBX_API_KEY node bench/tti.mjs 30)
done
start crun; b --runtime crun --n 0 --burst 0 --rtt 0 --idle 500 | tail -2
start runsc; b --runtime runsc --n 0 --burst 0 --rtt 0 --idle 50 | tail -2
fi
if [ "$only" != tti ]; then
  # the loopback registry of the template builds (images of base's rootfs)
  [ -x bin/sbx-test-registry ] || go build -o bin/sbx-test-registry ./test/e2e/registry
  reg=${SBX_BENCH_REGISTRY:-127.0.0.1:5077}
  bin/sbx-test-registry --addr "$reg" --rootfs "$shared_templates/base/rootfs" >"$data.reg" 2>&1 &
  reg_pid=$!
  for _ in $(seq 600); do grep -qx ready "$data.reg" && break; kill -0 $reg_pid 2>/dev/null || { cat "$data.reg"; exit 1; }; sleep 0.5; done
  for rt in crun runsc; do
    # a fresh layer store: the first build pulls the image (rm -rf leaves
    # the symlinked base and its symlinked layers alone)
    stop; [ -z "$tpl" ] || rm -rf "$tpl"; tpl=$(mktemp -d /tmp/sbx-bench-tpl-XXXXXX); chmod 0711 "$tpl"
    ln -s "$shared_templates/base" "$tpl/base"
    mkdir -m 0711 "$tpl/layers"
    for l in $(grep -o '"[0-9a-f]\{24\}"' "$shared_templates/base/template.json" | tr -d '"'); do
      ln -s "$shared_templates/layers/$l" "$tpl/layers/$l"
    done
    templates=$tpl; start "$rt"; templates=$shared_templates
    echo "== node test/e2e/bench/template.mjs ($rt, fresh layer store)"
    (cd test/e2e && E2B_API_URL=$SBX_URL E2B_SANDBOX_URL=$SBX_URL E2B_API_KEY=$SBX_API_KEY \
      SBX_E2E_RUNTIME=$rt SBX_BENCH_REGISTRY=$reg SBX_E2E_REGISTRY_BIN= node bench/template.mjs)
  done
  stop
fi
echo "== done $(date -u +%FT%TZ)"
