#!/usr/bin/env bash
# One command to set up and start sbx on a fresh Debian/Ubuntu machine:
#   sudo ./scripts/up.sh [sbx serve flags...]
# Installs what is missing (idempotent, cached), then runs `sbx serve` in the
# foreground on 127.0.0.1:3000 with the data dir /var/lib/sbx.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh
export PATH="${SBX_BIN_DIR:-/opt/sbx/bin}:$PATH"
exec bin/sbx serve --data-dir "${SBX_DATA_DIR:-/var/lib/sbx}" "$@"
