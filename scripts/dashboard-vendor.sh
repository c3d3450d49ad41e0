#!/usr/bin/env bash
# Refreshes the dashboard's vendored front-end dependencies from npm at the
# pinned versions below (internal/dashboard/assets/vendor, embedded in the
# binary: nothing is loaded from a CDN and `go build` needs no npm).
# Bump a version here, run this, review the diff, commit.
set -euo pipefail
cd "$(dirname "$0")/.."
XTERM=6.0.0     # @xterm/xterm, MIT
XTERM_FIT=0.11.0 # @xterm/addon-fit, MIT
dst=internal/dashboard/assets/vendor
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@xterm/xterm@$XTERM" "@xterm/addon-fit@$XTERM_FIT" >/dev/null)
rm -rf "$dst"; mkdir -p "$dst"
tar -xzf "$tmp"/xterm-xterm-$XTERM.tgz -C "$tmp" && mv "$tmp/package" "$tmp/xterm"
tar -xzf "$tmp"/xterm-addon-fit-$XTERM_FIT.tgz -C "$tmp" && mv "$tmp/package" "$tmp/fit"
cp "$tmp/xterm/lib/xterm.js" "$tmp/xterm/css/xterm.css" "$dst/"
cp "$tmp/xterm/LICENSE" "$dst/LICENSE.xterm"
cp "$tmp/fit/lib/addon-fit.js" "$dst/"
cp "$tmp/fit/LICENSE" "$dst/LICENSE.addon-fit"
{
  echo "# vendored by scripts/dashboard-vendor.sh; do not edit"
  echo "@xterm/xterm $XTERM MIT sha256:$(sha256sum "$tmp"/xterm-xterm-$XTERM.tgz | cut -d' ' -f1)"
  echo "@xterm/addon-fit $XTERM_FIT MIT sha256:$(sha256sum "$tmp"/xterm-addon-fit-$XTERM_FIT.tgz | cut -d' ' -f1)"
} >"$dst/VERSIONS"
echo "vendored into $dst:"; cat "$dst/VERSIONS"
