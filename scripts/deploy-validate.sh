#!/usr/bin/env bash
# Checks deploy/ offline: renders the Helm chart (default values, external
# PostgreSQL) and reads deploy/kubernetes, decoding every object strictly
# against the Kubernetes API types (deploy/validate, its own Go module).
# helm is built once from the Go module proxy and cached in $SBX_BIN_DIR
# (default /opt/sbx/bin), like runsc. With CI=true a helm that cannot be
# built is a failure; otherwise the rendering tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
HELM_VERSION=v4.3.1
BIN_DIR=${SBX_BIN_DIR:-/opt/sbx/bin}
helm="$BIN_DIR/helm"

if [ ! -x "$helm" ] || [ "$(cat "$BIN_DIR/helm.version" 2>/dev/null)" != "$HELM_VERSION" ]; then
  echo "building helm $HELM_VERSION into $BIN_DIR (once; a few minutes)" >&2
  mkdir -p "$BIN_DIR"
  if CGO_ENABLED=0 GOBIN="$BIN_DIR" go install -trimpath "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"; then
    echo "$HELM_VERSION" >"$BIN_DIR/helm.version"
  elif [ "${CI:-}" = true ]; then
    echo "helm $HELM_VERSION could not be built; CI=true makes this a failure" >&2
    exit 1
  else
    echo "helm could not be built: the chart is not rendered (set SBX_HELM to a helm binary)" >&2
    helm=""
  fi
fi

if [ -n "${SBX_HELM:-$helm}" ]; then
  for values in deploy/helm/sbx/values.yaml deploy/helm/sbx/ci/*.yaml; do
    "${SBX_HELM:-$helm}" lint --strict --quiet deploy/helm/sbx -f "$values" >/dev/null \
      || { "${SBX_HELM:-$helm}" lint --strict deploy/helm/sbx -f "$values" >&2; exit 1; }
  done
fi
cd deploy/validate
go mod tidy -diff >/dev/null || { echo "deploy/validate: go.mod/go.sum are not tidy (cd deploy/validate && go mod tidy):" >&2; go mod tidy -diff >&2; exit 1; }
go vet ./...
SBX_HELM=${SBX_HELM:-$helm} go test -count=1 ./...
