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

SBX_API_KEY=$key bin/sbx serve --listen 127.0.0.1:$port --data-dir "$data" \
  --templates-dir "${SBX_DATA_DIR:-/var/lib/sbx}/templates" --runtime "$rt" \
  --subnet 10.201.0.0/16 --net-prefix sbe ${SBX_E2E_SERVE_FLAGS:-} >"$log" 2>&1 &
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # runsc keeps a bind-mounted null netns under its root
  umount -l "$data/runtime/runsc/null-netns" 2>/dev/null || true
  [ "${KEEP:-}" = 1 ] || rm -rf "$data" || true
}
trap cleanup EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done

export E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port E2B_API_KEY=$key
export SBX_E2E_RUNTIME=$rt SBX_E2E_DATA_DIR=$data
status=0
node --test --test-concurrency=1 "${files[@]}" || status=$?
if [ $status -ne 0 ]; then
  echo "---- sbx serve log ($rt) ----" >&2; tail -n 80 "$log" >&2
fi
exit $status
