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
import glob, http.client, json, os, signal, statistics, subprocess, sys, time

bindir, rt = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 10
data = os.environ.get("SBX_CLAIM_DIR", "/var/tmp/sbx-claim-bench")
port = int(os.environ.get("SBX_CLAIM_PORT", "4250"))
key = "e2b_" + os.urandom(20).hex()
os.makedirs(data, exist_ok=True)
args = [os.path.join(bindir, "sbx"), "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data,
        "--templates-dir", os.environ.get("SBX_DATA_DIR", "/var/lib/sbx") + "/templates", "--runtime", rt,
        "--subnet", os.environ.get("SBX_CLAIM_SUBNET", "10.223.0.0/16"),
        "--net-prefix", os.environ.get("SBX_CLAIM_PREFIX", "hy"), "--uplink", "none",
        "--audit-anchor-dir", data + "/audit-anchor", "--metrics-listen", f"127.0.0.1:{port + 1}",
        "--pool", f"base={n}", "--max-sandboxes", str(n)]
log = open(os.path.join(data, "serve.log"), "w")
daemon = subprocess.Popen(args, stdout=log, stderr=log, env=dict(os.environ, SBX_API_KEY=key), start_new_session=True)


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    return c.getresponse().read().decode()


def pool_ready():
    try:
        for line in get(port + 1, "/metrics").splitlines():
            if line.startswith("sbx_pool_ready"):
                return int(float(line.split()[-1]))
    except OSError:
        pass
    return 0


def daemon_cpu_ms():
    t = 0
    for st in glob.glob(f"/proc/{daemon.pid}/task/*/schedstat"):
        try:
            t += int(open(st).read().split()[0])
        except OSError:
            pass
    return t / 1e6


def sandbox_cpu_ms(sid):
    try:
        return int(open(f"/sys/fs/cgroup/cpuacct/sbx/{sid}/cpuacct.usage").read()) / 1e6
    except OSError:
        pass
    try:
        for line in open(f"/sys/fs/cgroup/sbx/{sid}/cpu.stat"):
            if line.startswith("usage_usec"):
                return int(line.split()[1]) / 1e3
    except OSError:
        return None


def api(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"X-API-Key": key, "Content-Type": "application/json"})
    r = c.getresponse()
    b = r.read()
    return json.loads(b) if b else None


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
    os.killpg(daemon.pid, signal.SIGTERM)
    daemon.wait()
med = lambda v: round(statistics.median(v), 2) if v else None
print(json.dumps({"runtime": rt, "n": n, "wall_ms_p50": med(walls), "wall_ms_min": round(min(walls), 2),
                  "sandbox_cpu_ms_p50": med(sbx), "daemon_cpu_ms_p50": med(dmn)}))
