#!/usr/bin/env python3
"""Where a cold create's sandbox CPU goes, step by step: N cold creates (no
pool) one after the other against a throwaway `sbx serve` of bin-dir's
build; for each, the sandbox cgroup's CPU once the create answered (boot:
Sentry, gofer, agent, /init), over the next second idle, over a first
command and over a second one (each through `sbx exec`, then 0.6 s), and
the two commands' wall times; medians printed.
  test/e2e/bench/split.py <bin-dir> <runtime> N [cmd ...]
cmd defaults to `true` (one argument: run with bash -l -c, as the SDK does;
several: executed directly, e.g. `/bin/true x`). Port 4450, subnet
10.238.0.0/16, link prefix sp; needs root and cgroup v1 cpuacct (or v2)."""
import os, statistics, subprocess, sys, time
from benchd import Daemon, sandbox_cpu_ms
bindir, rt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cmd = sys.argv[4:] or ["true"]
port = 4450
d = Daemon(bindir, rt, "/var/tmp/sbx-split", port, "10.238.0.0/16", "sp")


def ex(sid):
    """Runs cmd in sid through `sbx exec`; returns its wall time in ms."""
    t = time.monotonic()
    subprocess.run([os.path.join(bindir, "sbx"), "exec", sid, "--", *cmd], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "SBX_URL": f"http://127.0.0.1:{port}", "SBX_API_KEY": d.key})
    return (time.monotonic() - t) * 1000


def ready():
    try:
        return '"status"' in d.get("/health")
    except Exception:  # noqa: BLE001 - not up yet
        return False


rows = []
try:
    deadline = time.time() + 60
    while not ready() and time.time() < deadline:
        time.sleep(0.2)
    for i in range(n + 1):  # the first create warms the daemon: not counted
        sid = d.api("POST", "/sandboxes", {"templateID": "base", "timeout": 120})["sandboxID"]
        a = sandbox_cpu_ms(sid)
        time.sleep(1)
        b = sandbox_cpu_ms(sid)
        w1 = ex(sid)
        time.sleep(0.6)
        c = sandbox_cpu_ms(sid)
        w2 = ex(sid)
        time.sleep(0.6)
        e = sandbox_cpu_ms(sid)
        if i:
            rows.append((a, b - a, c - b, e - c, w1, w2))
        d.api("DELETE", f"/sandboxes/{sid}")
        time.sleep(0.3)
finally:
    d.stop()
names = ["boot_cpu_ms", "idle_1s_cpu_ms", "first_cmd_cpu_ms", "second_cmd_cpu_ms", "first_cmd_wall_ms", "second_cmd_wall_ms"]
for k, name in enumerate(names):
    print(name, round(statistics.median(r[k] for r in rows), 1))
