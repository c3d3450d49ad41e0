#!/usr/bin/env bash
# Starts a throwaway `sbx serve` (fresh data dir, shared templates) with the
# given default runtime, runs the SDK end-to-end tests against it, checks that
# killing every sandbox leaves no host residue, and stops the daemon.
#   test/e2e/daemon/run.sh <runtime> [test files...]
set -euo pipefail
cd "$(dirname "$0")/../../.."
rt=${1:?runtime}; shift
files=("$@"); [ ${#files[@]} -gt 0 ] || files=(test/e2e/daemon.test.mjs)
port=${SBX_E2E_PORT:-3900}
data=$(mktemp -d /tmp/sbx-e2e-XXXXXX)
key="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
log="$data/serve.log"

# SBX_E2E_SUBNET / SBX_E2E_NET_PREFIX keep concurrent runs on one host apart.
args=(serve --listen 127.0.0.1:$port --data-dir "$data"
  --templates-dir "${SBX_DATA_DIR:-/var/lib/sbx}/templates" --runtime "$rt"
  --subnet "${SBX_E2E_SUBNET:-10.201.0.0/16}" --net-prefix "${SBX_E2E_NET_PREFIX:-sbe}" --uplink none
  --audit-anchor-dir "$data/audit-anchor" ${SBX_E2E_SERVE_FLAGS:-})  # a test's anchor goes with it (not /etc/sbx)
SBX_API_KEY=$key bin/sbx "${args[@]}" >"$log" 2>&1 &
pid=$!
# A test may restart the daemon (pause survives a restart): it stops the pid
# in serve.pid, starts "$SBX_E2E_BIN $SBX_E2E_SERVE_ARGS" and writes its pid.
echo "$pid" >"$data/serve.pid"
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  cur=$(cat "$data/serve.pid" 2>/dev/null || true)
  if [ -n "$cur" ] && [ "$cur" != "$pid" ]; then
    kill "$cur" 2>/dev/null || true
    for _ in $(seq 150); do kill -0 "$cur" 2>/dev/null || break; sleep 0.1; done
  fi
  # runsc keeps a bind-mounted null netns under its root; the run dir is
  # the daemon's tmpfs (it outlives the daemon by design, a test's must not)
  umount -l "$data/run/runtime/runsc/null-netns" 2>/dev/null || true
  # volumes are loop-mounted filesystems (and idmapped views) under the data dir
  findmnt -rn -o TARGET | grep "^$data/volumes/" | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  [ "${KEEP:-}" = 1 ] || umount -l "$data/run" 2>/dev/null || true
  # the daemon's nftables table outlives it by design; a test's must not
  [ "${KEEP:-}" = 1 ] || nft delete table inet "${SBX_E2E_NET_PREFIX:-sbe}" 2>/dev/null || true
  [ "${KEEP:-}" = 1 ] || rm -rf "$data" || true
}
trap cleanup EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done

export E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port E2B_API_KEY=$key
export E2B_VOLUME_API_URL=http://127.0.0.1:$port
export SBX_E2E_RUNTIME=$rt SBX_E2E_DATA_DIR=$data SBX_E2E_BIN=$PWD/bin/sbx SBX_E2E_SERVE_ARGS="${args[*]}"
status=0
node --test --test-concurrency=1 "${files[@]}" || status=$?
if [ $status -ne 0 ]; then
  echo "---- sbx serve log ($rt) ----" >&2; tail -n 80 "$log" >&2
fi
exit $status
