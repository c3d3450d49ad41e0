#!/usr/bin/env bash
# Starts a throwaway cluster on one host: PostgreSQL (Debian's binaries, as
# the postgres user, loopback port, private socket dir), three node daemons
# (`sbx serve --cluster`, their own data dirs, thirds of the subnet, link
# prefixes, ports; node 3 also serves a second API front: a node playing
# both roles) and an API front (`sbx serve --role api`), runs the SDK
# end-to-end tests against the front, empties every node and removes it all.
#   test/e2e/cluster/run.sh <runtime> [test files...]
# Ports: SBX_E2E_PORT (front), +1..+3 (nodes), +4 (node 3's front),
# SBX_E2E_PG_PORT (default SBX_E2E_PORT+20000: below the kernel's ephemeral
# range, so no client socket of an earlier test holds it; the next ports are
# tried if it is taken). SBX_E2E_SUBNET must be a /16.
# SBX_E2E_NODE_FLAGS / SBX_E2E_FRONT_FLAGS: more serve flags ({i} in the
# former is the node's number: --metrics-listen 127.0.0.1:2552{i}).
# SBX_E2E_NODES=2 starts two nodes (no node 3, so no second front).
# SBX_E2E_SHARED=1 gives the nodes one --shared-dir (paused sandboxes and
# snapshots move between them); the tests get the nodes' pids as started
# in SBX_E2E_NODE_PIDS.
# The tests stop and start the daemons with $SBX_E2E_CLUSTER_CTL:
#   run.sh --ctl <top> kill|stop|start <0 (the front) | 1..3 (a node)>
set -euo pipefail
cd "$(dirname "$0")/../../.."
nodes=(1 2 3)
[ "${SBX_E2E_NODES:-3}" != 2 ] || nodes=(1 2)

# mkargs i: a=(the serve arguments of daemon i; 0 is the front)
mkargs() {
  if [ "$1" = 0 ]; then
    a=(serve --role api --cluster "$url" --listen "127.0.0.1:$port" ${SBX_E2E_FRONT_FLAGS:-})
    return
  fi
  local extra=${SBX_E2E_NODE_FLAGS:-}
  a=(serve --cluster "$url" --node-id "node$1" --lease-ttl "${lease}s" --listen "127.0.0.1:$((port + $1))"
    --data-dir "$top/node$1" --templates-dir "${SBX_DATA_DIR:-/var/lib/sbx}/templates" --runtime "$rt"
    --subnet "$net.$((($1 - 1) * 64)).0/18" --net-prefix "$prefix$1" --uplink none --audit-anchor-dir "$top/node$1-anchor" ${extra//\{i\}/$1})
  [ "$1" != 3 ] || [ -n "${reap:-}" ] || a+=(--front-listen "127.0.0.1:$((port + 4))")
  [ -z "${SBX_E2E_SHARED:-}" ] || a+=(--shared-dir "$top/shared")
}

# start i: starts daemon i (its pid in $top/pid.i, its log appended to
# $top/log.i) and waits until it answers /health.
start() {
  mkargs "$1"
  echo "---- start $(date +%T.%N)" >>"$top/log.$1"
  SBX_API_KEY=$key setsid bin/sbx "${a[@]}" >>"$top/log.$1" 2>&1 </dev/null &
  echo $! >"$top/pid.$1"
  disown $! # a test kills it from another shell: no job notice here
  local p=$((port + $1))
  [ "$1" != 0 ] || p=$port
  for _ in $(seq 300); do
    curl -fsS "http://127.0.0.1:$p/health" >/dev/null 2>&1 && return 0
    kill -0 "$(cat "$top/pid.$1")" 2>/dev/null || { tail -n 40 "$top/log.$1" >&2; return 1; }
    sleep 0.1
  done
  echo "daemon $1: nothing answers on $p" >&2; tail -n 40 "$top/log.$1" >&2; return 1
}

# stop sig i: signals daemon i and waits until it is gone.
stop() {
  local pid
  pid=$(cat "$top/pid.$2" 2>/dev/null) || return 0
  kill "-$1" "$pid" 2>/dev/null || true
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  # gone for sure: the next serve (or --reap-all-and-exit) on its data dir
  # is refused while it holds the dir's lock
  if kill -KILL "$pid" 2>/dev/null; then
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$top/pid.$2"
}

if [ "${1:-}" = --ctl ]; then
  top=$2
  # shellcheck source=/dev/null
  . "$top/env"
  case $3 in
    kill) stop KILL "$4" ;;
    stop) stop TERM "$4" ;;
    start) start "$4" ;;
    *) echo "--ctl: kill|stop|start" >&2; exit 2 ;;
  esac
  exit
fi

rt=${1:?runtime}; shift
files=("$@"); [ ${#files[@]} -gt 0 ] || files=(test/e2e/cluster.test.mjs)
port=${SBX_E2E_PORT:-3900}
pgport=${SBX_E2E_PG_PORT:-$((port + 20000))}
lease=${SBX_E2E_LEASE:-3}
subnet=${SBX_E2E_SUBNET:-10.201.0.0/16}
[[ $subnet == */16 ]] || { echo "SBX_E2E_SUBNET must be a /16" >&2; exit 2; }
net=${subnet%.*.*/16}
prefix=${SBX_E2E_NET_PREFIX:-sbe}; prefix=${prefix:0:2}
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "PostgreSQL is not installed (apt-get install -y postgresql)" >&2; exit 1; }
top=$(mktemp -d /tmp/sbx-e2e-cluster-XXXXXX)
chmod 0711 "$top"
key="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"

mkdir "$top/pg" "$top/shared" && chown postgres: "$top/pg"
pg() { runuser -u postgres -- "$pgbin/$1" "${@:2}"; }
cleanup() {
  for i in 0 "${nodes[@]}"; do stop TERM "$i"; done
  if [ -n "${started:-}" ]; then
    for i in "${nodes[@]}"; do # empty each node: nothing it ran may stay on the host
      reap=1 mkargs "$i"
      SBX_API_KEY=$key bin/sbx "${a[@]}" --reap-all-and-exit >>"$top/reap.log" 2>&1 ||
        { echo "reap of node $i failed:" >&2; tail -n 20 "$top/reap.log" >&2; status=1; }
    done
  fi
  pg pg_ctl -D "$top/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
  for i in "${nodes[@]}"; do
    umount -l "$top/node$i/run/runtime/runsc/null-netns" 2>/dev/null || true
    umount -l "$top/node$i/run" 2>/dev/null || true
    nft delete table inet "$prefix$i" 2>/dev/null || true
  done
  [ "${KEEP:-}" = 1 ] || rm -rf "$top" || true
}
trap 'rc=$?; cleanup; [ $rc -ne 0 ] || rc=$status; exit $rc' EXIT
status=0
pg initdb -D "$top/pg/data" -U postgres -A trust --locale=C -E UTF8 --no-sync >/dev/null
# pgstart: starts PostgreSQL on $pgport or, if that is taken, one of the
# next ports; prints the server's log when none works.
pgstart() {
  for _ in 1 2 3 4 5; do
    pg pg_ctl -D "$top/pg/data" -l "$top/pg/log" -w start \
      -o "-p $pgport -k $top/pg -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null && return 0
    grep -q "Address already in use" "$top/pg/log" 2>/dev/null || break
    pgport=$((pgport + 7))
  done
  echo "---- PostgreSQL log ----" >&2; tail -n 40 "$top/pg/log" >&2; return 1
}
pgstart
url="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"
declare -p rt port lease net prefix key url nodes >"$top/env"
for v in SBX_E2E_SHARED SBX_E2E_NODE_FLAGS SBX_E2E_FRONT_FLAGS; do declare -p "$v" >>"$top/env" 2>/dev/null || true; done
started=1
for i in "${nodes[@]}" 0; do start "$i"; done

export E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port E2B_API_KEY=$key
urls=() npids=()
for i in "${nodes[@]}"; do urls+=("http://127.0.0.1:$((port + i))"); npids+=("$(cat "$top/pid.$i")"); done
export SBX_E2E_NODE_URLS="${urls[*]}" SBX_E2E_NODE_PIDS="${npids[*]}"
export SBX_E2E_NODE_FRONT_URL=http://127.0.0.1:$((port + 4))
export SBX_E2E_CLUSTER_CTL="$PWD/test/e2e/cluster/run.sh --ctl $top" SBX_E2E_CLUSTER_TOP=$top
export SBX_E2E_NET_PREFIX=$prefix SBX_E2E_LEASE=$lease SBX_E2E_RUNTIME=$rt
node --test --test-concurrency=1 "${files[@]}" || status=$?
if [ $status -ne 0 ]; then
  for i in "${nodes[@]}" 0; do echo "---- daemon $i log ($rt; 0 is the front) ----" >&2; tail -n 40 "$top/log.$i" >&2; done
fi
exit $status
