#!/usr/bin/env bash
# Runs test/e2e/secrets.test.mjs against `sbx serve` whose "internet" is a
# network namespace made here, so a sandbox's requests to api.test and
# evil.test reach a real upstream (test/e2e/secrets/upstream.mjs):
#   - netns <prefix>up joined to the host by veth x<prefix>up, a /24 in 11/8
#     derived from SBX_E2E_PORT (distinct per concurrent run), the daemon
#     masquerading out of it (--uplink) and asking its DNS server there;
#   - the upstream serves HTTP :80 and HTTPS :443 with a certificate of a CA
#     made here (openssl), which the daemon trusts for upstreams only
#     (--egress-upstream-ca); sandboxes do not trust it.
#   test/e2e/secrets/run.sh [runtime [test files...]]   (default runsc, test/e2e/secrets.test.mjs)
set -euo pipefail
cd "$(dirname "$0")/../../.."
rt=${1:-runsc}
files=("${@:2}")
[ ${#files[@]} -gt 0 ] || files=(test/e2e/secrets.test.mjs)
port=${SBX_E2E_PORT:-3900}
pfx=${SBX_E2E_NET_PREFIX:-sbe}
ns=${pfx}up link=x${pfx}up
net="11.$((port % 200 + 20)).$((port / 200 % 250))"
host_ip=$net.1 up_ip=$net.2
dir=$(mktemp -d /tmp/sbx-e2e-secrets-XXXXXX)
up_pid=
cleanup() {
  [ -z "$up_pid" ] || kill "$up_pid" 2>/dev/null || true
  ip link del "$link" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 -subj "/CN=sbx e2e upstream CA" 2>/dev/null
openssl req "${ec[@]}" -keyout "$dir/up.key" -out "$dir/up.csr" -subj "/CN=api.test" 2>/dev/null
printf 'subjectAltName=DNS:api.test,DNS:evil.test\nextendedKeyUsage=serverAuth\n' >"$dir/up.ext"
openssl x509 -req -in "$dir/up.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
  -days 2 -extfile "$dir/up.ext" -out "$dir/up.pem" 2>/dev/null

ip link del "$link" 2>/dev/null || true
ip netns del "$ns" 2>/dev/null || true
ip netns add "$ns"
ip link add "$link" type veth peer name eth0 netns "$ns"
ip addr add "$host_ip/24" dev "$link" && ip link set "$link" up
ip -n "$ns" addr add "$up_ip/24" dev eth0 && ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up
ip netns exec "$ns" node test/e2e/secrets/upstream.mjs "$up_ip" "$dir" &
up_pid=$!
for _ in $(seq 50); do [ -e "$dir/ready" ] && break; sleep 0.1; done
[ -e "$dir/ready" ] || { echo "upstream did not start" >&2; exit 1; }

export SBX_E2E_UPSTREAM_IP=$up_ip
SBX_E2E_SERVE_FLAGS="${SBX_E2E_SERVE_FLAGS:-} --uplink $link --dns-upstream $up_ip:53 --egress-upstream-ca $dir/ca.pem" \
  test/e2e/daemon/run.sh "$rt" "${files[@]}"
