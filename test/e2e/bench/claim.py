#!/usr/bin/env python3
"""What one pooled create (a claim) costs: wall time at the client and CPU.

Starts `<bin>/sbx serve` with a pool of N and --max-sandboxes N (so no refill
runs during the measurement), waits for the pool, makes N creates one after
the other (kept running), and prints per create, as medians: the wall time
of POST /sandboxes, the CPU the claimed sandbox's cgroup used during it
(cpuacct, hybrid or v1 cgroups; the Sentry, gofer and agent under runsc) and
the daemon's CPU (its threads' schedstat). CPU is far less distorted by a
loaded machine than wall time: compare branches by it, alternating.
  test/e2e/bench/claim.py <bin-dir> <runtime> [N]
Env: SBX_CLAIM_DIR (data dir, default /var/tmp/sbx-claim-bench), SBX_CLAIM_PORT
(4250; the metrics port is +1), SBX_CLAIM_SUBNET (10.223.0.0/16),
SBX_CLAIM_PREFIX (hy)."""
import glob, json, os, statistics, sys, time
from benchd import Daemon, sandbox_cpu_ms

bindir, rt = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 10
port = int(os.environ.get("SBX_CLAIM_PORT", "4250"))
d = Daemon(bindir, rt, os.environ.get("SBX_CLAIM_DIR", "/var/tmp/sbx-claim-bench"), port,
           os.environ.get("SBX_CLAIM_SUBNET", "10.223.0.0/16"), os.environ.get("SBX_CLAIM_PREFIX", "hy"),
           ["--pool", f"base={n}", "--max-sandboxes", str(n)])
api = d.api


def pool_ready():
    try:
        for line in d.get("/metrics", metrics=True).splitlines():
            if line.startswith("sbx_pool_ready"):
                return int(float(line.split()[-1]))
    except Exception:  # noqa: BLE001 - not up yet
        pass
    return 0


def daemon_cpu_ms():
    t = 0
    for st in glob.glob(f"/proc/{d.pid}/task/*/schedstat"):
        try:
            t += int(open(st).read().split()[0])
        except OSError:
            pass
    return t / 1e6


try:
    deadline = time.time() + 300
    while pool_ready() < n and time.time() < deadline:
        time.sleep(0.5)
    time.sleep(3)  # the last warm-up's reaping
    walls, sbx, dmn, ids = [], [], [], []
    for _ in range(n):
        before = {os.path.basename(d): sandbox_cpu_ms(os.path.basename(d)) for d in glob.glob("/sys/fs/cgroup/cpuacct/sbx/*") + glob.glob("/sys/fs/cgroup/sbx/*")}
        d0, t0 = daemon_cpu_ms(), time.monotonic()
        sb = api("POST", "/sandboxes", {"templateID": "base", "timeout": 120})
        walls.append((time.monotonic() - t0) * 1000)
        dmn.append(daemon_cpu_ms() - d0)
        sid = sb["sandboxID"]
        ids.append(sid)
        a, b = before.get(sid), sandbox_cpu_ms(sid)
        if a is not None and b is not None:
            sbx.append(b - a)
        time.sleep(0.3)
    for sid in ids:
        api("DELETE", f"/sandboxes/{sid}")
finally:
    d.stop()
med = lambda v: round(statistics.median(v), 2) if v else None
print(json.dumps({"runtime": rt, "n": n, "wall_ms_p50": med(walls), "wall_ms_min": round(min(walls), 2),
                  "sandbox_cpu_ms_p50": med(sbx), "daemon_cpu_ms_p50": med(dmn)}))
