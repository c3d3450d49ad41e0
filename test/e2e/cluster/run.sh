#!/usr/bin/env bash
# Starts a throwaway cluster on one host: PostgreSQL (Debian's binaries, as
# the postgres user, loopback port, private socket dir), two node daemons
# (`sbx serve --cluster`, their own data dirs, halves of the subnet, link
# prefixes, ports) and an API front (`sbx serve --role api`), runs the SDK
# end-to-end tests against the front, empties both nodes and removes it all.
#   test/e2e/cluster/run.sh <runtime> [test files...]
# Ports: SBX_E2E_PORT (front), +1 and +2 (nodes), SBX_E2E_PG_PORT (default
# SBX_E2E_PORT+50000). SBX_E2E_SUBNET must be a /16. SBX_E2E_SHARED=1 gives
# the nodes one --shared-dir (paused sandboxes and snapshots move between
# them); the tests get the nodes' pids in SBX_E2E_NODE_PIDS.
set -euo pipefail
cd "$(dirname "$0")/../../.."
rt=${1:?runtime}; shift
files=("$@"); [ ${#files[@]} -gt 0 ] || files=(test/e2e/cluster.test.mjs)
port=${SBX_E2E_PORT:-3900}
pgport=${SBX_E2E_PG_PORT:-$((port + 50000))}
subnet=${SBX_E2E_SUBNET:-10.201.0.0/16}
[[ $subnet == */16 ]] || { echo "SBX_E2E_SUBNET must be a /16" >&2; exit 2; }
net=${subnet%.*.*/16}
prefix=${SBX_E2E_NET_PREFIX:-sbe}; prefix=${prefix:0:2}
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "PostgreSQL is not installed (apt-get install -y postgresql)" >&2; exit 1; }
top=$(mktemp -d /tmp/sbx-e2e-cluster-XXXXXX)
chmod 0711 "$top"
key="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
pids=()
half=(x "$net.0.0/17" "$net.128.0/17")
# mkargs i: a=(the serve arguments of node i)
mkargs() {
  a=(serve --cluster "$url" --node-id "node$1" --lease-ttl 3s --listen "127.0.0.1:$((port + $1))"
    --data-dir "$top/node$1" --templates-dir "${SBX_DATA_DIR:-/var/lib/sbx}/templates" --runtime "$rt"
    --subnet "${half[$1]}" --net-prefix "$prefix$1" --uplink none --audit-anchor-dir "$top/node$1-anchor")
  [ -z "${SBX_E2E_SHARED:-}" ] || a+=(--shared-dir "$top/shared")
}

mkdir "$top/pg" "$top/shared" && chown postgres: "$top/pg"
pg() { runuser -u postgres -- "$pgbin/$1" "${@:2}"; }
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${url:-}" ]; then
    for i in 1 2; do # empty each node: nothing it ran may stay on the host
      mkargs $i
      SBX_API_KEY=$key bin/sbx "${a[@]}" --reap-all-and-exit >>"$top/reap.log" 2>&1 ||
        { echo "reap of node $i failed:" >&2; tail -n 20 "$top/reap.log" >&2; status=1; }
    done
  fi
  pg pg_ctl -D "$top/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
  for i in 1 2; do
    umount -l "$top/node$i/run/runtime/runsc/null-netns" 2>/dev/null || true
    umount -l "$top/node$i/run" 2>/dev/null || true
    nft delete table inet "$prefix$i" 2>/dev/null || true
  done
  [ "${KEEP:-}" = 1 ] || rm -rf "$top" || true
}
trap 'rc=$?; cleanup; [ $rc -ne 0 ] || rc=$status; exit $rc' EXIT
status=0
pg initdb -D "$top/pg/data" -U postgres -A trust --locale=C -E UTF8 --no-sync >/dev/null
pg pg_ctl -D "$top/pg/data" -l "$top/pg/log" -w start \
  -o "-p $pgport -k $top/pg -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null
url="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"

wait_health() {
  for _ in $(seq 150); do
    curl -fsS "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { cat "$3"; exit 1; }
    sleep 0.1
  done
  echo "nothing answers on $1" >&2; cat "$3"; exit 1
}
for i in 1 2; do
  mkargs $i
  SBX_API_KEY=$key bin/sbx "${a[@]}" >"$top/node$i.log" 2>&1 &
  pids+=($!)
  wait_health $((port + i)) $! "$top/node$i.log"
done
bin/sbx serve --role api --cluster "$url" --listen "127.0.0.1:$port" >"$top/front.log" 2>&1 &
pids+=($!)
wait_health "$port" $! "$top/front.log"

export E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port E2B_API_KEY=$key
export SBX_E2E_NODE_URLS="http://127.0.0.1:$((port + 1)) http://127.0.0.1:$((port + 2))"
export SBX_E2E_RUNTIME=$rt SBX_E2E_NODE_PIDS="${pids[0]} ${pids[1]}"
node --test --test-concurrency=1 "${files[@]}" || status=$?
if [ $status -ne 0 ]; then
  for f in node1 node2 front; do echo "---- $f log ($rt) ----" >&2; tail -n 40 "$top/$f.log" >&2; done
fi
exit $status
