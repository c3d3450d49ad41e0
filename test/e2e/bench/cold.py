#!/usr/bin/env python3
"""What one cold create (no pool) costs in CPU, split by who pays.

Starts `<bin>/sbx serve` without a pool, moves it into a cpuacct cgroup of
its own (so the runtime CLI processes it starts are counted with it, until
the runtime moves the sandbox's processes into the sandbox's cgroup), makes
N creates one after the other (each deleted before the next) and prints
medians per create: the wall time of POST /sandboxes, the sandbox cgroup's
CPU once the create answered (under runsc the Sentry, gofer and agent) and
the host side (the daemon's cgroup: the daemon plus the runtime commands and
whatever ran before the sandbox's processes joined their cgroup); and means
over the run (clock ticks) of the daemon's own CPU and of its waited
children's (the runtime commands; a delete's too); and the CPU the last
sandbox uses idle, per second, over 3 s from 7 s after its create (past
the agent's OOM guard's 5 s quiet period, oomguard.QuietAfter). CPU is far less distorted by a
loaded machine than wall time: compare branches by it, alternating.
  test/e2e/bench/cold.py <bin-dir> <runtime> [N]
Env: SBX_COLD_DIR (data dir, default /var/tmp/sbx-cold-bench), SBX_COLD_PORT
(4450; the metrics port is +1), SBX_COLD_SUBNET (10.246.0.0/16),
SBX_COLD_PREFIX (hw), SBX_COLD_TIDS (a file: each sandbox's thread ids are
appended to it before its delete, for `perf report --tid`), SBX_RUNSC (another runsc build than
the installed one, benchd.py). Needs cgroup v1 cpuacct (or hybrid) and root."""
import json, os, statistics, sys, time
from benchd import Daemon, sandbox_cpu_ms

bindir, rt = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 10
port = int(os.environ.get("SBX_COLD_PORT", "4450"))
d = Daemon(bindir, rt, os.environ.get("SBX_COLD_DIR", "/var/tmp/sbx-cold-bench"), port,
           os.environ.get("SBX_COLD_SUBNET", "10.246.0.0/16"), os.environ.get("SBX_COLD_PREFIX", "hw"))
api = d.api
host_cg = f"/sys/fs/cgroup/cpuacct/sbx-cold-bench-{d.pid}"
os.makedirs(host_cg, exist_ok=True)
open(host_cg + "/cgroup.procs", "w").write(str(d.pid))


def host_cpu_ms():
    return int(open(host_cg + "/cpuacct.usage").read()) / 1e6


def daemon_cpu_ms():
    """The daemon's own CPU and its waited children's (clock ticks: summed
    over the run, not per create)."""
    f = open(f"/proc/{d.pid}/stat").read().rsplit(")", 1)[1].split()
    tick = 1000 / os.sysconf("SC_CLK_TCK")
    return (int(f[11]) + int(f[12])) * tick, (int(f[13]) + int(f[14])) * tick


def ready():
    try:
        return '"status"' in d.get("/health")
    except Exception:  # noqa: BLE001 - not up yet
        return False


try:
    deadline = time.time() + 60
    while not ready() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    walls, sbx, host = [], [], []
    for i in range(n + 1):  # the first create warms the daemon: not counted
        if i == 1:
            d0 = daemon_cpu_ms()
        h0, t0 = host_cpu_ms(), time.monotonic()
        sb = api("POST", "/sandboxes", {"templateID": "base", "timeout": 120})
        wall = (time.monotonic() - t0) * 1000
        h = host_cpu_ms() - h0
        s = sandbox_cpu_ms(sb["sandboxID"])
        if i > 0:
            walls.append(wall)
            host.append(h)
            if s is not None:
                sbx.append(s)
        if i == n:  # the last one: what it costs idle, past the OOM guard's quiet period
            time.sleep(7)
            a = sandbox_cpu_ms(sb["sandboxID"])
            time.sleep(3)
            idle = (sandbox_cpu_ms(sb["sandboxID"]) - a) / 3
        if os.environ.get("SBX_COLD_TIDS"):  # for perf report --tid
            with open(os.environ["SBX_COLD_TIDS"], "a") as f:
                f.write(open(f"/sys/fs/cgroup/cpuacct/sbx/{sb['sandboxID']}/tasks").read())
        api("DELETE", f"/sandboxes/{sb['sandboxID']}")
        time.sleep(0.3)
    d1 = daemon_cpu_ms()
finally:
    d.stop()
    try:
        os.rmdir(host_cg)
    except OSError:
        pass
med = lambda v: round(statistics.median(v), 1) if v else None
print(json.dumps({"runtime": rt, "n": n, "wall_ms_p50": med(walls), "sandbox_cpu_ms_p50": med(sbx),
                  "sandbox_cpu_ms_min": round(min(sbx), 1) if sbx else None,
                  "host_cpu_ms_p50": med(host), "daemon_cpu_ms_mean": round((d1[0] - d0[0]) / n, 1),
                  "runtime_cli_cpu_ms_mean": round((d1[1] - d0[1]) / n, 1), "idle_cpu_ms_per_s": round(idle, 1)}))
