#!/usr/bin/env bash
# Runs the whole sbx test suite on real runtimes, as root. `.ci/run` calls
# exactly this. It sets up what is missing first (scripts/install.sh), then:
#   1. gofmt, go vet, go mod tidy -diff (go.mod and go.sum are tidy); deploy/:
#      the Helm chart and Kubernetes manifests checked offline (scripts/deploy-validate.sh)
#   2. go test -race ./... : unit tests, the runtime conformance suite on
#      runsc/crun/runc, network, layers, templates, and integration tests
#      against a real `sbx serve` on every runtime
#   3. short fuzz runs of the untrusted-input parsers
#   4. the agent end-to-end test with the official e2b SDK (debug mode)
#   5. the daemon end-to-end test with the official e2b SDK, per runtime
#      (exposed ports, sudo inside sandboxes); HTTPS host routing (runsc)
#   6. code interpreter end-to-end with @e2b/code-interpreter, through the daemon
#      and the MCP tools with the official MCP TypeScript SDK (stdio and /mcp)
#   6a. volumes end-to-end (the SDK's Volume class and volumeMounts) on runsc and crun
#   6b. the web dashboard in headless Chromium (puppeteer-core), on runsc
#   6c. cluster end-to-end: the SDK through an API front over three nodes on PostgreSQL
#   7. sbx bench, the SDK TTI script and the template benchmark in a short mode, so they cannot rot
# With CI=true a missing runtime, template or tool is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${SBX_BIN_DIR:-/opt/sbx/bin}:/usr/local/go/bin:$PATH"
export SBX_DATA_DIR=${SBX_DATA_DIR:-/var/lib/sbx}
export SBX_TEMPLATES_DIR="$SBX_DATA_DIR/templates"
RUNTIMES=${SBX_TEST_RUNTIMES:-runsc crun runc}

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

SBX_TEMPLATES="base code-interpreter-v1" ./scripts/install.sh
# test-only: a static busybox for the template tests' image without a shell of its own
dpkg -s busybox-static >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends busybox-static >/dev/null; }
# test-only: Debian's chromium, the headless browser the dashboard test drives
dpkg -s chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
# test-only: PostgreSQL, the cluster store's back end; the tests start their own throwaway servers
dpkg -s postgresql >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null; }
# test-only: Debian's docker-registry, the OCI registry a cluster's nodes share templates through
# (integration/cluster_templates_test.go starts its own on a loopback port; the packaged service stays off)
dpkg -s docker-registry >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null; }

log "gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go'))
[ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; exit 1; }
go vet ./...
log "go mod tidy changes nothing"
go mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy (run: go mod tidy):" >&2; go mod tidy -diff >&2; exit 1; }

# deploy/ is checked beside go test (its first run builds helm, minutes of
# mostly compiling); its output is shown if it fails, and the suite waits for it.
log "deploy/: Helm chart and manifests rendered and decoded strictly against the Kubernetes API types (offline; in the background)"
deploy_log=$(mktemp)
./scripts/deploy-validate.sh >"$deploy_log" 2>&1 &
deploy_pid=$!

log "npm SDKs for the end-to-end tests"
(cd test/e2e && npm ci --no-audit --no-fund --silent)

log "go test -race ./..."
SBX_AGENT_BIN="$PWD/bin/sbx-agent" go test -race -count=1 -p 1 -timeout 40m ./... # -p 1: packages share the host (nftables, netns)
wait "$deploy_pid" || { cat "$deploy_log" >&2; echo "deploy/ validation failed" >&2; exit 1; }
log "deploy/ validation passed"

log "fuzz (short)"
for target in "FuzzParseMetadataFilter ./internal/api" "FuzzParseListQuery ./internal/api" \
  "FuzzDecodeCreate ./internal/api" "FuzzRouteHost ./internal/proxy" \
  "FuzzSignatureRouting ./internal/proxy" "FuzzParseDomain ./internal/egress" \
  "FuzzParseClientHello ./internal/egress/guard" "FuzzParse ./internal/egress/rules" \
  "FuzzHandshake ./internal/egress/socks"; do
  set -- $target
  # A count, not a duration: Go 1.26's fuzz coordinator can fail a duration-bounded run with a
  # bare "context deadline exceeded" at the deadline (go.dev/issue/75804, fixed in Go 1.27).
  # A failure that wrote no crasher under testdata/fuzz is that race; it is run once more.
  for try in 1 2; do
    out=$(go test -run '^$' -fuzz "^$1\$" -fuzztime 20000x "$2" 2>&1) && break
    if [ "$try" = 2 ] || [ -n "$(git status --porcelain -- "$2/testdata/fuzz")" ]; then
      echo "$out" >&2; exit 1 # output only on failure
    fi
    echo "fuzz $1: failed without a crasher (Go's fuzz coordinator); once more" >&2
  done
done

log "agent end-to-end (official e2b SDK, debug mode)"
SBX_AGENT_BIN="$PWD/bin/sbx-agent" test/e2e/agent/run.sh

for rt in $RUNTIMES; do
  log "daemon end-to-end on $rt (official e2b SDK), exposed ports, E2B's edges, sudo and device/pseudo-file reads included"
  test/e2e/daemon/run.sh "$rt" test/e2e/daemon.test.mjs test/e2e/ports.test.mjs test/e2e/edges.test.mjs test/e2e/envdpaths.test.mjs test/e2e/sudo.test.mjs test/e2e/devfiles.test.mjs
done

case " $RUNTIMES " in *" runsc "*)
  log "E2B's own SDK tests, ported (e2b and @e2b/code-interpreter suites), on runsc"
  test/e2e/daemon/run.sh runsc test/e2e/e2bsuite.test.mjs
  log "more of E2B's own SDK tests, ported (template names and tags, pause, auto-pause, snapshots, network, git, python suite), on runsc"
  test/e2e/daemon/run.sh runsc test/e2e/e2bsuite2.test.mjs
  log "a third round of E2B's own SDK tests, ported (code interpreter as root, cwd, languages, env vars, streaming, display data, reconnect; built-in template tags; files remove), on runsc"
  test/e2e/daemon/run.sh runsc test/e2e/e2bsuite3.test.mjs
  log "a fourth round of E2B's own SDK tests, ported (missing ids, fork, encoded list filters, pause and resume, watch events, kernel recovery, template tags, runCmd users, build stack traces), on runsc"
  test/e2e/daemon/run.sh runsc test/e2e/e2bsuite4.test.mjs
  log "E2B's control-plane answers at their edges (setTimeout past the max, list filters, a paused sandbox's endAt, the v1 list, e2b template publish), on runsc"
  test/e2e/daemon/run.sh runsc test/e2e/controlplane.test.mjs
esac

case " $RUNTIMES " in *" runsc "*)
  log "HTTPS host routing end-to-end on runsc (official e2b SDK by E2B_DOMAIN, private CA, wildcard cert)"
  # test-only: openssl makes the private CA and the wildcard certificate
  command -v openssl >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends openssl >/dev/null; }
  test/e2e/tls/run.sh runsc ;;
esac

# the loopback registry the template builds pull from (images made from the
# base template's rootfs), built once so the test does not compile it
go build -o bin/sbx-test-registry ./test/e2e/registry
export SBX_E2E_REGISTRY_BIN="$PWD/bin/sbx-test-registry"
log "templates end-to-end on runsc (official e2b SDK Template builder, loopback registry)"
# a short step bound, so the test of a step that never ends is quick
SBX_E2E_SERVE_FLAGS="${SBX_E2E_SERVE_FLAGS:-} --build-step-timeout 45s" \
  test/e2e/daemon/run.sh runsc test/e2e/template.test.mjs
log "bring your own environment on runsc: a team's layered templates with the SDK's Template builder (start/ready commands, inheritance, Dockerfile conversion)"
test/e2e/daemon/run.sh runsc test/e2e/template-team.test.mjs

case " $RUNTIMES " in *" runsc "*)
  log "pause, resume, fork, snapshots, auto-pause (and at a team's disk quota), restart end-to-end on runsc (official e2b SDK)"
  # runsc only: it is the backend with memory checkpoints (crun/runc answer
  # 501, covered by integration/pause_test.go; autoPause at a disk quota on
  # crun by integration TestAutoPauseDeferredAtTeamQuota).
  test/e2e/daemon/run.sh runsc test/e2e/pause.test.mjs test/e2e/autopause-quota.test.mjs ;;
esac

for rt in runsc crun; do
  log "metrics, logs and the e2b CLI end-to-end on $rt (official e2b SDK, @e2b/cli, a pty for connect)"
  test/e2e/daemon/run.sh "$rt" test/e2e/observability.test.mjs
done

for rt in runsc crun; do
  log "code interpreter end-to-end on $rt (@e2b/code-interpreter through the daemon)"
  test/e2e/daemon/run.sh "$rt" test/e2e/interpreter.test.mjs
done

log "MCP end-to-end on runsc (official MCP TypeScript SDK client: sbx mcp over stdio, the daemon's /mcp)"
test/e2e/daemon/run.sh runsc test/e2e/mcp.test.mjs

for rt in runsc crun; do
  log "volumes end-to-end on $rt (official e2b SDK Volume class, volume content API, volumeMounts)"
  test/e2e/daemon/run.sh "$rt" test/e2e/volume.test.mjs
done

log "cluster end-to-end on crun (official e2b SDK through the API front of three nodes on a throwaway PostgreSQL: node loss, restarts)"
# the benches print the front's overhead and a list across the nodes (30 sandboxes here; SBX_BENCH_LIST_N=999 for the figure)
test/e2e/cluster/run.sh crun test/e2e/cluster.test.mjs test/e2e/bench-cluster.test.mjs test/e2e/bench-cluster-list.test.mjs

log "cluster pause/resume and snapshots across nodes on runsc (official e2b SDK through the front; nodes share a --shared-dir; one is killed)"
SBX_E2E_SHARED=1 SBX_E2E_NODES=2 test/e2e/cluster/run.sh runsc test/e2e/cluster-pause.test.mjs

for rt in runsc crun; do
  log "egress proxy end-to-end on $rt (official e2b SDK network.egressProxy, a SOCKS5 server on the host's loopback)"
  SBX_E2E_SERVE_FLAGS="${SBX_E2E_SERVE_FLAGS:-} --egress-proxy-open 127.0.0.1/32" \
    test/e2e/daemon/run.sh "$rt" test/e2e/egressproxy.test.mjs
done

log "teams end-to-end on runsc (official e2b SDK and CLI with two teams' keys: isolation, snapshots, revocation)"
test/e2e/daemon/run.sh runsc test/e2e/teams.test.mjs

log "dashboard end-to-end on runsc (headless Chromium via puppeteer-core: sign in, terminal, files, kill, sign out)"
test/e2e/daemon/run.sh runsc test/e2e/dashboard.test.mjs

for rt in runsc crun; do
  log "secrets and network.rules end-to-end on $rt (official e2b SDK Secret class, rules, updateNetwork; upstream in a netns)"
  command -v openssl >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends openssl >/dev/null; }
  # with the interceptor's throughput benchmark in a short mode (2 runs), so it cannot rot
  SBX_BENCH_RUNS=2 test/e2e/secrets/run.sh "$rt" test/e2e/secrets.test.mjs test/e2e/bench/intercept.test.mjs
done

log "benchmarks, short mode"
test/e2e/daemon/run.sh crun test/e2e/bench.test.mjs test/e2e/bench-template.test.mjs # the latter: registry from SBX_E2E_REGISTRY_BIN
test/e2e/bench/raw.sh crun 3
log "all tests passed"
