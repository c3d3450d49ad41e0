"""Run inside a code-interpreter-v1 sandbox by runcode-parts.mjs: times, interleaved,
the agent's /execute over the sandbox's loopback (TOK: the access token), and a
python kernel of its own started with the driver's options and transport (those
of internal/agent/interpreter/kernel_driver.py; "plain" as argv[2]: none and TCP,
as before 2026-11-26) driven the way the driver drives its kernel. Prints medians in ms,
with the time at which each of the kernel's messages for the cell arrived."""
import glob
import http.client
import json
import os
import sys
import tempfile
import time

import zmq
from jupyter_client.manager import KernelManager

N = int(sys.argv[1])
FAST = glob.glob("/tmp/sbx-interpreter-*/ipykernel_fast.py")
ARGS = ["--HistoryManager.enabled=False", "--Kernel._execute_sleep=0"] + (
    ["--IPKernelApp.code_to_run=exec(open(%r).read(), {})" % FAST[0]] if FAST else [])
PLAIN = sys.argv[2:] == ["plain"]
if PLAIN:
    ARGS = []
CELL = {"code": "1+1", "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True}


def agent_once(conn):
    conn.request("POST", "/execute", body=json.dumps({"code": "1+1"}),
                 headers={"Content-Type": "application/json", "X-Access-Token": os.environ.get("TOK", "")})
    body = conn.getresponse().read()
    assert b'"text":"2"' in body, body


class Kernel:
    def __init__(self):
        self.km = KernelManager(kernel_name="python3")
        if not PLAIN:  # unix sockets, as the driver's
            self.km.transport, self.km.ip = "ipc", os.path.join(tempfile.mkdtemp(), "ipc")
        self.km.start_kernel(extra_arguments=ARGS)
        self.s, self.sh, self.io = self.km.session, self.km.connect_shell(), self.km.connect_iopub()
        self.p = zmq.Poller()
        self.p.register(self.sh, zmq.POLLIN)
        self.p.register(self.io, zmq.POLLIN)
        while True:  # ready once its iopub reaches us
            self.s.send(self.sh, "kernel_info_request", {})
            if self.io in dict(self.p.poll(1000)):
                while self.p.poll(300):
                    for sock in (self.sh, self.io):
                        self.s.recv(sock, mode=zmq.NOBLOCK)
                return

    def once(self, phases):
        t0 = time.perf_counter()
        mid = self.s.send(self.sh, "execute_request", CELL)["header"]["msg_id"]
        while True:
            for sock, _ in self.p.poll(5000):
                _, m = self.s.recv(sock, mode=zmq.NOBLOCK)
                if m is None or m["parent_header"].get("msg_id") != mid:
                    continue
                t = m["msg_type"] if m["msg_type"] != "status" else m["content"]["execution_state"]
                phases.setdefault(t, (time.perf_counter() - t0) * 1000)
                if t == "idle":
                    return


def med(v):
    return round(sorted(v)[len(v) // 2], 2)


def main():
    k, conn = Kernel(), http.client.HTTPConnection("127.0.0.1", 49999)
    for _ in range(5):
        agent_once(conn)
        k.once({})
    agent, kernel, phases = [], [], []
    for _ in range(N):
        t0 = time.perf_counter()
        agent_once(conn)
        agent.append((time.perf_counter() - t0) * 1000)
        ph = {}
        t0 = time.perf_counter()
        k.once(ph)
        kernel.append((time.perf_counter() - t0) * 1000)
        phases.append(ph)
    print(json.dumps({"agent_loopback": med(agent), "kernel_alone": med(kernel),
                      "kernel_msgs_at": {t: med([p.get(t, -1) for p in phases])
                                         for t in ("busy", "execute_input", "execute_result", "idle")}}))
    k.km.shutdown_kernel(now=True)


main()
