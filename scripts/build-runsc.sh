#!/usr/bin/env bash
# Builds gVisor's runsc at a pinned module version with sbx's patches.
#
#   scripts/build-runsc.sh VERSION OUTDIR   build OUTDIR/runsc and OUTDIR/runsc.version
#   scripts/build-runsc.sh --stamp VERSION  print the version stamp a build would write
#
# The module source comes from the Go module proxy (`go mod download`) and is
# copied to a scratch directory, where third_party/gvisor/patches/*.patch are
# applied in name order (`git apply`, paths relative to the module root) and
# the precompiled seccomp programs are generated and checked against the
# compiled ones (third_party/gvisor/_precompile, built and run inside the
# copy). runsc is then built from the copy
# (CGO_ENABLED=0, -trimpath) and moved into OUTDIR with its stamp,
# VERSION+sbx.<12 hex of the sha256 of this script, the patches and the
# generator>: install.sh rebuilds when a patch changes; `runsc --version`
# prints it too. See third_party/gvisor/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tp=$here/third_party/gvisor

# stamp VERSION: what the build of VERSION with the current patches is called.
stamp() {
  local sum
  sum=$(cd "$here" && { echo scripts/build-runsc.sh; find third_party/gvisor/patches third_party/gvisor/_precompile \
    -type f \( -name '*.patch' -o -name '*.go' \); } | LC_ALL=C sort | xargs sha256sum | sha256sum)
  echo "$1+sbx.${sum:0:12}"
}

if [ "${1:-}" = --stamp ]; then
  [ $# = 2 ] || { echo "usage: $0 --stamp VERSION" >&2; exit 2; }
  stamp "$2"
  exit 0
fi
[ $# = 2 ] || { echo "usage: $0 VERSION OUTDIR | --stamp VERSION" >&2; exit 2; }
version=$1 out=$2
export CGO_ENABLED=0 GOFLAGS=-mod=mod

work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-runsc-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# git apply must not mistake a repository above the scratch dir for ours.
export GIT_CEILING_DIRECTORIES=$work

echo "==> module gvisor.dev/gvisor@$version"
dir=$(go mod download -json "gvisor.dev/gvisor@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || { echo "go mod download gvisor.dev/gvisor@$version gave no Dir" >&2; exit 1; }
src=$work/gvisor
cp -r "$dir" "$src"
chmod -R u+w "$src"

shopt -s nullglob
for p in "$tp"/patches/*.patch; do
  echo "==> patch $(basename "$p")"
  (cd "$src" && git apply --whitespace=nowarn "$p")
done

echo "==> precompiled seccomp programs"
cp -r "$tp/_precompile" "$src/sbxprecompile"
(cd "$src" && go build -trimpath -tags sbx_gvisor_precompile -o "$work/precompile" ./sbxprecompile)
"$work/precompile" -program sentry -out "$src/runsc/boot/filter/filter_precompiled.go"
"$work/precompile" -program gofer -out "$src/runsc/fsgofer/filter/filter_precompiled.go"
"$work/precompile" -program systrap -package systrap -out "$src/pkg/sentry/platform/systrap/stub_precompiled.go"
# Each precompiled program, rendered with this process's variables, must be
# what runsc would compile from its rules (verify_test.go).
(cd "$src" && go test -count=1 -tags sbx_gvisor_precompile ./sbxprecompile)
# The systrap stub's, rendered with a few stub addresses (patch 15's test).
(cd "$src" && go test -count=1 -run TestPrecompiledMatchesBuilt ./pkg/sentry/platform/systrap)

echo "==> go build runsc"
st=$(stamp "$version")
(cd "$src" && go build -trimpath -ldflags "-X gvisor.dev/gvisor/runsc/version.version=$st" -o "$work/runsc" ./runsc)
# Replaced by rename: a runsc that is running (or being exec'd) keeps its inode.
mkdir -p "$out"
mv -f "$work/runsc" "$out/runsc.new"
mv -f "$out/runsc.new" "$out/runsc"
echo "$st" >"$out/runsc.version"
