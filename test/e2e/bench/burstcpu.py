#!/usr/bin/env python3
"""Where a burst's CPU goes: the sandboxes' own CPU per create, and per second
after each one's activation.

Starts `<bin>/sbx serve --pool base=P` (debug log) on <runtime>, waits for the
pool to fill, runs `sbx bench --n 0 --burst N --rtt 0 --idle 0 --floor 0`
while sampling every sandbox cgroup's CPU every 50 ms, and prints the bench's
burst line, the machine's idle share over the burst (/proc/stat), the CPU of
this daemon's sandboxes per create from the burst's start to its end (kills
included), their medians at the end of their start and over their life, and
the median CPU they used in each second after their activation (the daemon's
"sandbox activated" debug line). The figures are this daemon's sandboxes'
only, so a machine shared with other sandboxes distorts them far less than
wall times: compare builds by them, alternating.
  test/e2e/bench/burstcpu.py <bin-dir> <runtime> [N] [P]
Env: SBX_BURST_DIR (data dir, default /var/tmp/sbx-burst-bench), SBX_BURST_PORT
(4460; metrics on +1), SBX_BURST_SUBNET (10.246.0.0/16), SBX_BURST_PREFIX (hb),
SBX_RUNSC (benchd.py). Needs cgroup v1 cpuacct (or hybrid) and root."""
import datetime, os, re, shutil, statistics as st, subprocess, sys, threading, time
from benchd import Daemon, sandbox_cpu_ms

bindir, rt = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 100
pool = int(sys.argv[4]) if len(sys.argv) > 4 else 10
data = os.environ.get("SBX_BURST_DIR", "/var/tmp/sbx-burst-bench")
port = int(os.environ.get("SBX_BURST_PORT", "4460"))
for m in ("run/runtime/runsc/null-netns", "run"):  # a previous run's mounts
    subprocess.run(["umount", "-l", os.path.join(data, m)], stderr=subprocess.DEVNULL)
shutil.rmtree(data, ignore_errors=True)
d = Daemon(bindir, rt, data, port, os.environ.get("SBX_BURST_SUBNET", "10.246.0.0/16"),
           os.environ.get("SBX_BURST_PREFIX", "hb"), extra=("--pool", f"base={pool}", "--log-level", "debug"))
ROOT = "/sys/fs/cgroup/cpuacct/sbx"
samples, stop = {}, threading.Event()


def sample():
    while not stop.is_set():
        t = time.time()
        for sid in os.listdir(ROOT) if os.path.isdir(ROOT) else []:
            c = sandbox_cpu_ms(sid)
            if c is not None:
                samples.setdefault(sid, []).append((t, c))
        time.sleep(0.05)


def pool_ready():
    try:
        return sum(float(l.split()[-1]) for l in d.get("/metrics", metrics=True).splitlines()
                   if l.startswith("sbx_pool_ready{"))
    except Exception:  # noqa: BLE001 - not up yet
        return 0


def cpu_at(sid, t):
    v = 0
    for tt, c in samples.get(sid, []):
        if tt <= t:
            v = c
    return v


def stat_ticks():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return f[3], sum(f)


def log_times(msg):
    """Sandbox id → time of the daemon's debug line msg."""
    out = {}
    for line in open(os.path.join(data, "serve.log")):
        m = re.search(r'time=(\S+) .*msg="' + msg + r'" sandbox=(\S+)', line)
        if m:
            out[m.group(2)] = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
    return out


try:
    deadline = time.time() + 180
    while pool_ready() < pool and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(3)
    threading.Thread(target=sample, daemon=True).start()
    time.sleep(0.2)
    t0, (i0, a0) = time.time(), stat_ticks()
    env = dict(os.environ, SBX_URL=f"http://127.0.0.1:{port}", SBX_API_KEY=d.key)
    out = subprocess.run([os.path.join(bindir, "sbx"), "bench", "--runtime", rt, "--n", "0", "--burst", str(n),
                          "--rtt", "0", "--idle", "0", "--floor", "0"], env=env, capture_output=True, text=True).stdout
    i1, a1 = stat_ticks()
    stop.set()
    time.sleep(0.1)
    print("\n".join(l for l in out.splitlines() if "burst" in l))
    started, acts = log_times("sandbox started"), log_times("sandbox activated")
    mine = [s for s in samples if s in acts and acts[s] > t0]  # the burst's own (not refills)
    total = sum(samples[s][-1][1] - cpu_at(s, t0) for s in mine)
    print(f"machine idle over the burst: {100 * (i1 - i0) / max(a1 - a0, 1):.1f} % (load {open('/proc/loadavg').read().split()[0]})")
    print(f"the burst's {len(mine)} sandboxes: {total / max(len(mine), 1):.1f} ms of CPU each over the burst (kills included)")
    boot = [cpu_at(s, started[s]) for s in mine if started[s] > t0]
    life = [samples[s][-1][1] for s in mine if started[s] > t0]
    if boot:
        print(f"cold ones, median: {st.median(boot):.1f} ms at the end of their start, {st.median(life):.1f} ms over their life")
    per = {}
    for s, ta in acts.items():
        last = samples.get(s, [(0, 0)])[-1][0]
        for k in range(12):
            if last < ta + k + 1:
                break
            per.setdefault(k, []).append(cpu_at(s, ta + k + 1) - cpu_at(s, ta + k))
    print("median CPU (ms) in second k after activation: " +
          " ".join(f"{k}:{st.median(v):.0f}" for k, v in sorted(per.items())))
finally:
    stop.set()
    d.stop()
