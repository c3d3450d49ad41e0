"""What the bench scripts (claim.py, cold.py) share: a throwaway `sbx serve`
of bin-dir's build on a private data dir, port (metrics on port + 1), subnet
and link prefix; its API with a fresh admin key; a sandbox's CPU. SBX_RUNSC
names the runsc binary (serve --runsc; default the installed one)."""
import http.client, json, os, signal, subprocess


class Daemon:
    """A started `sbx serve`; stop() ends it (and what it started)."""

    def __init__(self, bindir, rt, data, port, subnet, prefix, extra=()):
        self.port, self.key = port, "e2b_" + os.urandom(20).hex()
        os.makedirs(data, exist_ok=True)
        args = [os.path.join(bindir, "sbx"), "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data,
                "--templates-dir", os.environ.get("SBX_DATA_DIR", "/var/lib/sbx") + "/templates", "--runtime", rt,
                "--subnet", subnet, "--net-prefix", prefix, "--uplink", "none",
                "--audit-anchor-dir", data + "/audit-anchor", "--metrics-listen", f"127.0.0.1:{port + 1}", *extra]
        if rt == "runsc" and os.environ.get("SBX_RUNSC"):  # another runsc build than the installed one
            args += ["--runsc", os.environ["SBX_RUNSC"]]
        log = open(os.path.join(data, "serve.log"), "w")
        self.proc = subprocess.Popen(args, stdout=log, stderr=log, env=dict(os.environ, SBX_API_KEY=self.key),
                                     start_new_session=True)
        self.pid = self.proc.pid

    def api(self, method, path, body=None):
        """One API call; a status of 300 or more raises."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"X-API-Key": self.key, "Content-Type": "application/json"})
        r = c.getresponse()
        b = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {b[:200]}")
        return json.loads(b) if b else None

    def get(self, path, metrics=False):
        """GET path from the API listener (or the metrics one) as text."""
        c = http.client.HTTPConnection("127.0.0.1", self.port + 1 if metrics else self.port, timeout=30)
        c.request("GET", path)
        return c.getresponse().read().decode()

    def stop(self):
        os.killpg(self.pid, signal.SIGTERM)
        self.proc.wait()


def sandbox_cpu_ms(sid):
    """The sandbox cgroup's CPU so far (v1/hybrid cpuacct, else cgroup v2), or None."""
    try:
        return int(open(f"/sys/fs/cgroup/cpuacct/sbx/{sid}/cpuacct.usage").read()) / 1e6
    except OSError:
        pass
    try:
        for line in open(f"/sys/fs/cgroup/sbx/{sid}/cpu.stat"):
            if line.startswith("usage_usec"):
                return int(line.split()[1]) / 1e3
    except OSError:
        pass
    return None
