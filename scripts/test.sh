#!/usr/bin/env bash
# Runs the whole sbx test suite on real runtimes, as root. `.ci/run` calls
# exactly this. It sets up what is missing first (scripts/install.sh), then:
#   1. gofmt / go vet
#   2. go test -race ./... (unit, runtime conformance, network, templates ...)
#   3. the agent end-to-end test with the official e2b SDK (debug mode)
#   4. the daemon end-to-end test with the official e2b SDK, once per runtime
# With CI=true a missing runtime or tool is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${SBX_BIN_DIR:-/opt/sbx/bin}:/usr/local/go/bin:$PATH"
export SBX_DATA_DIR=${SBX_DATA_DIR:-/var/lib/sbx}
RUNTIMES=${SBX_TEST_RUNTIMES:-runsc crun runc}

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

./scripts/install.sh

log "gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go'))
[ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; exit 1; }
go vet ./...

log "npm SDK for the end-to-end tests"
(cd test/e2e && npm ci --no-audit --no-fund --silent)

log "go test -race ./..."
SBX_TEMPLATES_DIR="$SBX_DATA_DIR/templates" SBX_AGENT_BIN="$PWD/bin/sbx-agent" \
  go test -race -count=1 -timeout 20m ./...

if [ -x test/e2e/agent/run.sh ]; then
  log "agent end-to-end (official e2b SDK, debug mode)"
  SBX_AGENT_BIN="$PWD/bin/sbx-agent" test/e2e/agent/run.sh
fi

for rt in $RUNTIMES; do
  log "daemon end-to-end on $rt (official e2b SDK)"
  test/e2e/daemon/run.sh "$rt"
done
log "all tests passed"
