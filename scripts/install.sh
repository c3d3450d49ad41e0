#!/usr/bin/env bash
# Sets up everything sbx needs on a Debian/Ubuntu host, idempotently:
# apt packages (crun, runc, nftables, debootstrap ...), the pinned gVisor runsc
# (built from the Go module proxy, cached), the sbx binaries, and the base
# template (built once, cached under the data dir). A second run takes seconds.
#
# Environment: SBX_DATA_DIR (default /var/lib/sbx), SBX_BIN_DIR for runsc
# (default /opt/sbx/bin), SBX_TEMPLATES (default "base").
set -euo pipefail
cd "$(dirname "$0")/.."

GVISOR_VERSION=v0.0.0-20260905035102-160fafc42237 # pinned; see docs/ARCHITECTURE.md
DATA_DIR=${SBX_DATA_DIR:-/var/lib/sbx}
BIN_DIR=${SBX_BIN_DIR:-/opt/sbx/bin}
TEMPLATES=${SBX_TEMPLATES:-base}

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'sbx install: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (sbx manages namespaces, cgroups, mounts and nftables)"
export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || die "Go 1.26+ is required (https://go.dev/dl/); put it on PATH"

need_pkgs=()
for p in crun runc nftables debootstrap iproute2 attr procps ca-certificates e2fsprogs mount; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if [ ! -x "$BIN_DIR/runsc" ] || [ "$(cat "$BIN_DIR/runsc.version" 2>/dev/null)" != "$GVISOR_VERSION" ]; then
  log "building gVisor runsc $GVISOR_VERSION (once; cached in $BIN_DIR)"
  mkdir -p "$BIN_DIR"
  CGO_ENABLED=0 GOBIN="$BIN_DIR" go install "gvisor.dev/gvisor/runsc@$GVISOR_VERSION"
  echo "$GVISOR_VERSION" >"$BIN_DIR/runsc.version"
fi

log "building sbx"
CGO_ENABLED=0 go build -trimpath -o bin/ ./cmd/sbx ./cmd/sbx-agent

# Built by the template builder (Debian source + provisioning layers, cached);
# a template of the layout before it (a whole tree) is rebuilt and replaced.
for t in $TEMPLATES; do
  log "template $t (cached after the first build)"
  bin/sbx template build "$t" --data-dir "$DATA_DIR"
done
log "ready: $(pwd)/bin/sbx, runtimes: runsc ($BIN_DIR/runsc), crun, runc; data dir $DATA_DIR"
