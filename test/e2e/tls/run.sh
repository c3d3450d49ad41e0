#!/usr/bin/env bash
# Runs test/e2e/tls.test.mjs against `sbx serve` with an HTTPS origin, the
# way a local setup without public DNS or a public CA works:
#   - a private CA made here (openssl), trusted by the test through
#     NODE_EXTRA_CA_CERTS, and a wildcard certificate for *.sbx.test from it;
#   - the daemon serves plain HTTP on $SBX_E2E_PORT (health checks) and HTTPS
#     on $SBX_E2E_TLS_PORT (default: the next port) with
#     --domain sbx.test:<tls port>, so the SDK (E2B_DOMAIN) builds
#     https://api.sbx.test:<port> and https://<port>-<id>.sbx.test:<port>;
#   - resolve.cjs, preloaded into node, answers *.sbx.test with 127.0.0.1
#     (nothing on the host's resolver changes).
#   test/e2e/tls/run.sh [runtime]   (default runsc)
set -euo pipefail
cd "$(dirname "$0")/../../.."
rt=${1:-runsc}
port=${SBX_E2E_PORT:-3900}
tls_port=${SBX_E2E_TLS_PORT:-$((port + 1))}
dir=$(mktemp -d /tmp/sbx-e2e-tls-XXXXXX)
trap 'rm -rf "$dir"' EXIT
host=sbx.test

ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 -subj "/CN=sbx e2e test CA" 2>/dev/null
leaf() { # leaf NAME SAN...: a certificate from the CA for the given names
  local name=$1; shift
  openssl req "${ec[@]}" -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$1" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$(printf 'DNS:%s,' "$@" | sed 's/,$//')" >"$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -extfile "$dir/$name.ext" -out "$dir/$name.pem" 2>/dev/null
}
leaf tls "*.$host" "$host"
leaf other "*.other.test" # for the startup check of a certificate that does not cover the domain

export SBX_E2E_TLS_DIR=$dir SBX_E2E_TLS_DOMAIN="$host:$tls_port" SBX_E2E_TLS_HOST=$host
export NODE_EXTRA_CA_CERTS=$dir/ca.pem
export NODE_OPTIONS="${NODE_OPTIONS:-} --require=$PWD/test/e2e/tls/resolve.cjs"
SBX_E2E_SERVE_FLAGS="${SBX_E2E_SERVE_FLAGS:-} --tls-cert $dir/tls.pem --tls-key $dir/tls.key --tls-listen 127.0.0.1:$tls_port --domain $host:$tls_port" \
  test/e2e/daemon/run.sh "$rt" test/e2e/tls.test.mjs
