#!/usr/bin/env bash
# Sets up everything sbx needs on a Debian/Ubuntu host, idempotently:
# apt packages (crun, runc, nftables, debootstrap ...), the pinned gVisor runsc
# (built from the Go module proxy with sbx's patches by scripts/build-runsc.sh,
# cached), the sbx binaries, and the base template (built once, cached under
# the data dir). A second run takes seconds.
# It prints one line per stage with its time; the tools' own output goes to
# a log file (named on the first line; its end is shown if a stage fails).
#
# Environment: SBX_DATA_DIR (default /var/lib/sbx), SBX_BIN_DIR for runsc
# (default /opt/sbx/bin), SBX_TEMPLATES (default "base"; set and empty:
# none), SBX_INSTALL_LOG (default /var/log/sbx-install.log).
set -euo pipefail
cd "$(dirname "$0")/.."

GVISOR_VERSION=v0.0.0-20260905035102-160fafc42237 # pinned; see docs/ARCHITECTURE.md
DATA_DIR=${SBX_DATA_DIR:-/var/lib/sbx}
BIN_DIR=${SBX_BIN_DIR:-/opt/sbx/bin}
TEMPLATES=${SBX_TEMPLATES-base}
LOG=${SBX_INSTALL_LOG:-/var/log/sbx-install.log}

die() { printf 'sbx install: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (sbx manages namespaces, cgroups, mounts and nftables)"
export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || die "Go 1.26+ is required (https://go.dev/dl/); put it on PATH"
. scripts/lib/stage.sh
stage_log "$LOG"

need_pkgs=()
for p in crun runc nftables debootstrap iproute2 attr procps ca-certificates e2fsprogs mount git; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  stage "apt packages: ${need_pkgs[*]}" sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends "$@"' apt "${need_pkgs[@]}"
else
  stage_cached "apt packages"
fi

# runsc is built with sbx's patches (third_party/gvisor); its stamp names the
# version and the patches, so a build of other patches is rebuilt.
RUNSC_STAMP=$(scripts/build-runsc.sh --stamp "$GVISOR_VERSION")
if [ ! -x "$BIN_DIR/runsc" ] || [ "$(cat "$BIN_DIR/runsc.version" 2>/dev/null)" != "$RUNSC_STAMP" ]; then
  stage "gVisor runsc $RUNSC_STAMP (build from source with sbx's patches, once, a few minutes; cached in $BIN_DIR)" \
    scripts/build-runsc.sh "$GVISOR_VERSION" "$BIN_DIR"
else
  stage_cached "gVisor runsc $RUNSC_STAMP"
fi

stage "sbx binaries (bin/sbx, bin/sbx-agent)" env CGO_ENABLED=0 go build -trimpath -o bin/ ./cmd/sbx ./cmd/sbx-agent

# Built by the template builder (Debian source + provisioning layers, cached);
# a template of the layout before it (a whole tree) is rebuilt and replaced.
for t in $TEMPLATES; do
  stage "template $t (Debian bootstrap, then packages inside it; cached after the first build)" \
    bin/sbx template build "$t" --data-dir "$DATA_DIR"
done
stage_say "ready: $(pwd)/bin/sbx, runtimes: runsc ($BIN_DIR/runsc), crun, runc; data dir $DATA_DIR"
