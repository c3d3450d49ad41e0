"""sbx code-interpreter driver for one Jupyter kernel (ipykernel, IRkernel).

Started by the Go server (internal/agent/interpreter) as the sandbox user,
with the kernelspec name as its argument ("python3" if none, "ir" for R).
It starts that real kernel with jupyter_client's KernelManager and speaks
the Jupyter messaging protocol (ZMQ, signed messages) to it over plain
blocking sockets (Wire).

Requests arrive as JSON lines on stdin:  {"op": "execute", "code": ..., "silent": bool}
Events leave as JSON lines on fd 3:
  {"type": "ready", "pgid": <kernel pid>}          once, when the kernel answers
  {"type": "stdout"|"stderr", "text": ...}
  {"type": "result", "data": {mime: value}, "main": bool}
  {"type": "error", "name", "value", "traceback": [...]}
  {"type": "count", "count": n}
  {"type": "done"}                                  end of one execute
  {"type": "dead", "reason": ...}                   the kernel died; the driver exits
  {"type": "fatal", "error": ...}                   the kernel could not start
Interrupts are SIGINT sent by the server to the kernel's process group.
On stdin EOF the kernel is shut down and the driver exits.
"""
import json
import os
import shutil
import sys
import tempfile

EVENTS = os.fdopen(3, "w", buffering=64 << 10, encoding="utf-8", errors="replace")


def send(obj):
    """Queues one event; flush() sends what is queued (see Wire.poll)."""
    EVENTS.write(json.dumps(obj, default=str) + "\n")


def flush():
    EVENTS.flush()


KERNEL = sys.argv[1] if len(sys.argv) > 1 else "python3"
LANGUAGE = {"python3": "python", "ir": "R"}.get(KERNEL, KERNEL)
# ipykernel's options, for speed under gVisor (see docs/BENCHMARKS.md):
# - the SQLite input history is off: its thread commits every cell to
#   ~/.ipython for a cross-session history a sandbox's kernel never reads;
#   In, _ih, _i and %history of the running session are in memory anyway;
# - no 0.5 ms sleep before each execute_reply (it only orders the reply after
#   output on another socket; the driver ends a cell at idle, on iopub);
# - ipykernel_fast.py, next to this file, run in the kernel at start;
# - then ipykernel_e2b.py: the result formats E2B's template adds (its
#   charts from ipykernel_charts.py, read when first needed).
HERE = os.path.dirname(os.path.abspath(__file__))
FAST = os.path.join(HERE, "ipykernel_fast.py")
E2B = os.path.join(HERE, "ipykernel_e2b.py")
CHARTS = os.path.join(HERE, "ipykernel_charts.py")
KERNEL_ARGS = {"python3": [
    "--HistoryManager.enabled=False",
    "--Kernel._execute_sleep=0",
    "--IPKernelApp.code_to_run=exec(open(%r).read(), {'__name__': 'sbx_ipykernel_fast'}); "
    "exec(open(%r).read(), {'__name__': 'sbx_ipykernel_e2b', '_charts': %r})" % (FAST, E2B, CHARTS),
]}.get(KERNEL, [])
# Poll interval while a cell runs: how soon a dead kernel is noticed.
ALIVE_EVERY_MS = 500
READY_TIMEOUT_S = 120


class Wire:
    """The kernel's shell and iopub channels as plain blocking ZMQ sockets,
    with the manager's Session signing and checking every message.

    jupyter_client's blocking client wraps asyncio sockets and runs an event
    loop per message it reads (nest_asyncio), and starts heartbeat and
    control channels; under gVisor that was milliseconds per cell. The
    stdin channel is not connected: cells run with allow_stdin=False."""

    def __init__(self, km):
        import zmq

        self.zmq = zmq
        self.session = km.session
        self.shell = km.connect_shell()
        self.iopub = km.connect_iopub()
        self.poller = zmq.Poller()
        self.poller.register(self.shell, zmq.POLLIN)
        self.poller.register(self.iopub, zmq.POLLIN)

    def request(self, msg_type, content):
        """Sends a shell request; returns its msg_id."""
        return self.session.send(self.shell, msg_type, content)["header"]["msg_id"]

    def poll(self, timeout_ms):
        """Returns the messages ready within timeout_ms as (channel, msg)
        pairs, channel "shell" or "iopub". Queued events are sent first:
        a burst of output leaves in one write, and nothing waits in the
        queue while the kernel is quiet."""
        flush()
        out = []
        for sock, _ in self.poller.poll(timeout_ms):
            _, msg = self.session.recv(sock, mode=self.zmq.NOBLOCK)
            if msg is not None:
                out.append(("iopub" if sock is self.iopub else "shell", msg))
        return out

    def wait_ready(self, km):
        """Waits until the kernel answers kernel_info_request and its iopub
        messages reach us (a new SUB socket misses what is published before
        its subscription is in place); False if the kernel died or the
        deadline passed."""
        import time

        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if not km.is_alive():
                return False
            self.request("kernel_info_request", {})
            for channel, _ in self.poll(1000):
                if channel == "iopub":
                    while self.poll(100):  # the rest of this request's messages
                        pass
                    return True
        return False


def start():
    try:
        from jupyter_client.manager import KernelManager
    except ImportError as e:
        fatal("jupyter_client is not installed: %s" % e)
    tmp = tempfile.mkdtemp(prefix="sbx-kernel-")
    km = KernelManager(kernel_name=KERNEL)
    km.connection_file = os.path.join(tmp, "kernel.json")
    if KERNEL == "python3":
        # unix sockets in our private directory rather than loopback TCP
        # ports: a little quicker through gVisor's netstack (0.3-0.6 ms a
        # cell), and no port another process of the sandbox can reach.
        # IRkernel speaks TCP only. A unix socket's path has at most 107
        # bytes: a long TMPDIR keeps TCP.
        ipc = os.path.join(tmp, "ipc")
        if len(ipc) < 96:
            km.transport, km.ip = "ipc", ipc
    try:
        km.start_kernel(cwd=os.getcwd(), extra_arguments=KERNEL_ARGS)
        wire = Wire(km)
        if not wire.wait_ready(km):
            raise RuntimeError("the kernel did not answer")
    except Exception as e:  # noqa: BLE001 - reported to the server as is
        shutdown(km, tmp)
        fatal("cannot start the %s kernel: %s: %s" % (LANGUAGE, type(e).__name__, e))
    return km, wire, tmp


def fatal(error):
    send({"type": "fatal", "error": error})
    flush()
    sys.exit(1)


def kernel_pid(km):
    prov = getattr(km, "provisioner", None)
    proc = getattr(prov, "process", None) or getattr(km, "kernel", None)
    return getattr(proc, "pid", 0) or 0


def shutdown(km, tmp):
    try:
        km.shutdown_kernel(now=True)
    except Exception:  # noqa: BLE001 - best effort on the way out
        pass
    shutil.rmtree(tmp, ignore_errors=True)


def forward(msg, msg_id):
    """Sends one iopub message of our request; returns True at idle."""
    if msg.get("parent_header", {}).get("msg_id") != msg_id:
        return False
    t, c = msg["msg_type"], msg["content"]
    if t == "stream":
        send({"type": "stderr" if c.get("name") == "stderr" else "stdout", "text": c.get("text", "")})
    elif t in ("execute_result", "display_data", "update_display_data"):
        send({"type": "result", "data": c.get("data", {}), "main": t == "execute_result"})
    elif t == "error":
        send({"type": "error", "name": c.get("ename", ""), "value": c.get("evalue", ""),
              "traceback": c.get("traceback", [])})
    elif t == "execute_input":
        send({"type": "count", "count": c.get("execution_count", 0)})
    elif t == "status" and c.get("execution_state") == "idle":
        return True
    return False


def execute(km, wire, code, silent):
    """Runs one cell and forwards its output until the kernel is idle again
    (a kernel publishes idle after the execute_reply, so no reply is awaited;
    replies are read and dropped as they come). False if the kernel died."""
    msg_id = wire.request("execute_request", {
        "code": code, "silent": silent, "store_history": not silent,
        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    while True:
        msgs = wire.poll(ALIVE_EVERY_MS)
        if not msgs and not km.is_alive():
            return False
        for channel, msg in msgs:
            if channel == "iopub" and forward(msg, msg_id):
                return True


def main():
    km, wire, tmp = start()
    send({"type": "ready", "pgid": kernel_pid(km)})
    flush()
    try:
        for line in sys.stdin:
            req = json.loads(line)
            if req.get("op") != "execute":
                continue
            if not execute(km, wire, req.get("code", ""), bool(req.get("silent"))):
                send({"type": "dead", "reason": "the %s kernel died" % LANGUAGE})
                return
            send({"type": "done"})
            flush()
    finally:
        flush()
        shutdown(km, tmp)


if __name__ == "__main__":
    main()
