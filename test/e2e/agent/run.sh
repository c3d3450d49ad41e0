#!/usr/bin/env bash
# Starts a throwaway sbx-agent on localhost:49983 (as root, the way it runs in
# a sandbox, with an /init secret), runs SDK end-to-end tests against it with
# E2B_DEBUG=true (the e2b SDK then talks straight to localhost:49983, no API),
# and stops the agent.
#   test/e2e/agent/run.sh [test files...]
# Default files: test/e2e/agent.test.mjs, and test/e2e/files.test.mjs if it
# exists. SBX_AGENT_BIN picks the binary (default bin/sbx-agent, built if
# missing). Tests get SBX_E2E_INIT_TOKEN (the /init secret), SBX_E2E_AGENT_URL
# and SBX_E2E_AGENT_PID. The default sandbox user `user` is created on this
# host (useradd -m) if missing.
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
bin=${SBX_AGENT_BIN:-$root/bin/sbx-agent}
port=49983
url=http://localhost:$port

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=(test/e2e/agent.test.mjs)
  [ -f test/e2e/files.test.mjs ] && files+=(test/e2e/files.test.mjs)
fi

[ "$(id -u)" = 0 ] || { echo "agent e2e: must run as root (processes run as other users)" >&2; exit 1; }
if [ ! -x "$bin" ]; then
  echo "agent e2e: building $bin" >&2
  CGO_ENABLED=0 go build -trimpath -o "$bin" ./cmd/sbx-agent
fi
id user >/dev/null 2>&1 || useradd -m -s /bin/bash user
[ -d test/e2e/node_modules/e2b ] || (cd test/e2e && npm ci --no-audit --no-fund --silent)
if curl -fsS -o /dev/null "$url/health" 2>/dev/null; then
  echo "agent e2e: something already answers on $url" >&2
  exit 1
fi

log=$(mktemp /tmp/sbx-agent-e2e-XXXXXX.log)
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
SBX_AGENT_INIT_TOKEN=$secret "$bin" --port "$port" >"$log" 2>&1 &
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$log"
}
trap cleanup EXIT
for _ in $(seq 100); do
  curl -fsS -o /dev/null "$url/health" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.05
done

export E2B_DEBUG=true SBX_E2E_INIT_TOKEN=$secret SBX_E2E_AGENT_URL=$url SBX_E2E_AGENT_PID=$pid
status=0
node --test --test-concurrency=1 "${files[@]}" || status=$?
if [ $status -ne 0 ]; then
  echo "---- sbx-agent log ----" >&2
  tail -n 80 "$log" >&2
fi
exit $status
