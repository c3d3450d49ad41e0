#!/usr/bin/env bash
# One command to set up and start sbx on a fresh Debian/Ubuntu machine:
#   sudo ./scripts/up.sh [--service] [sbx serve flags...]
# Installs what is missing (scripts/install.sh: idempotent, cached; one line
# per stage), starts building code-interpreter-v1 in the background (creates
# of it answer 503 with Retry-After until it is ready), then runs the daemon
# on 127.0.0.1:3000 with the data dir /var/lib/sbx:
#   without --service  `sbx serve` in the foreground (Ctrl-C stops it);
#   with --service     the systemd service sbx.service (sbx service install):
#                      started now and at boot, the API key in /etc/sbx/sbx.env
#                      (root only), logs in the journal. Rerunning it after
#                      `git pull` rebuilds and restarts the service; running
#                      sandboxes survive the restart (re-adopted).
# Environment: as scripts/install.sh, and SBX_BACKGROUND_TEMPLATES (default
# "code-interpreter-v1"; "" for none). A --data-dir among the serve flags is
# SBX_DATA_DIR: the templates are built into that data dir too.
set -euo pipefail
cd "$(dirname "$0")/.."
service=false
if [ "${1:-}" = --service ]; then
  service=true
  shift
fi
# a --data-dir among the serve flags is the install's data dir too (its
# templates are built there), as SBX_DATA_DIR would be
prev=
for a in "$@"; do
  case $prev in --data-dir | -data-dir) export SBX_DATA_DIR=$a ;; esac
  case $a in --data-dir=* | -data-dir=*) export SBX_DATA_DIR=${a#*=} ;; esac
  prev=$a
done
./scripts/install.sh
export PATH="${SBX_BIN_DIR:-/opt/sbx/bin}:$PATH"
DATA_DIR=${SBX_DATA_DIR:-/var/lib/sbx}

# background_build NAME: build a built-in template in a process of its own
# (a new session: it outlives this script and is no child of the daemon).
background_build() {
  local log
  log=$(dirname "${SBX_INSTALL_LOG:-/var/log/sbx-install.log}")/sbx-template-$1.log
  if bin/sbx template ls --local --data-dir "$DATA_DIR" "${build_flags[@]}" 2>/dev/null | awk 'NR > 1 { print $1 }' | grep -qx "$1"; then
    printf '\033[1m==>\033[0m template %s: built (checked in the background, rebuilt if its definition changed; log: %s)\n' "$1" "$log" >&2
  else
    printf '\033[1m==>\033[0m template %s: building in the background (a few minutes; log: %s);\n    creates of it answer 503 with Retry-After until it is ready\n' "$1" "$log" >&2
  fi
  setsid bin/sbx template build "$1" --data-dir "$DATA_DIR" "${build_flags[@]}" </dev/null >"$log" 2>&1 &
}
# the serve flags a built-in build must share with the daemon
build_flags=()
prev=
for a in "$@"; do
  case $prev in --templates-dir | -templates-dir | --uid-base | -uid-base) build_flags+=("$prev" "$a") ;; esac
  case $a in --templates-dir=* | -templates-dir=* | --uid-base=* | -uid-base=*) build_flags+=("$a") ;; esac
  prev=$a
done
for t in ${SBX_BACKGROUND_TEMPLATES-code-interpreter-v1}; do
  case " ${SBX_TEMPLATES:-base} " in *" $t "*) continue ;; esac # built above
  background_build "$t"
done

if $service; then
  exec bin/sbx service install -- --data-dir "$DATA_DIR" "$@"
fi
exec bin/sbx serve --data-dir "$DATA_DIR" "$@"
