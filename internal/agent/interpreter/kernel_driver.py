"""sbx code-interpreter driver for one Jupyter kernel (ipykernel, IRkernel).

Started by the Go server (internal/agent/interpreter) as the sandbox user,
with the kernelspec name as its argument ("python3" if none, "ir" for R).
It starts that real kernel with jupyter_client's KernelManager and speaks
the Jupyter messaging protocol (ZMQ, signed messages) to it.

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
import queue
import shutil
import sys
import tempfile

EVENTS = os.fdopen(3, "w", buffering=1, encoding="utf-8", errors="replace")


def send(obj):
    EVENTS.write(json.dumps(obj, default=str) + "\n")
    EVENTS.flush()


KERNEL = sys.argv[1] if len(sys.argv) > 1 else "python3"
LANGUAGE = {"python3": "python", "ir": "R"}.get(KERNEL, KERNEL)


def start():
    try:
        from jupyter_client.manager import KernelManager
    except ImportError as e:
        send({"type": "fatal", "error": "jupyter_client is not installed: %s" % e})
        sys.exit(1)
    tmp = tempfile.mkdtemp(prefix="sbx-kernel-")
    km = KernelManager(kernel_name=KERNEL)
    km.connection_file = os.path.join(tmp, "kernel.json")
    try:
        km.start_kernel(cwd=os.getcwd())
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
    except Exception as e:  # noqa: BLE001 - reported to the server as is
        send({"type": "fatal", "error": "cannot start the %s kernel: %s: %s" % (LANGUAGE, type(e).__name__, e)})
        shutdown(km, tmp)
        sys.exit(1)
    return km, kc, tmp


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


def execute(km, kc, code, silent):
    msg_id = kc.execute(code, silent=silent, store_history=not silent,
                        allow_stdin=False, stop_on_error=True)
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            if not km.is_alive():
                return False
            continue
        if forward(msg, msg_id):
            break
    drain_reply(kc, msg_id)
    return True


def drain_reply(kc, msg_id):
    """Consumes the execute_reply so replies never pile up on the shell channel."""
    while True:
        try:
            reply = kc.get_shell_msg(timeout=1)
        except queue.Empty:
            return
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return


def main():
    km, kc, tmp = start()
    send({"type": "ready", "pgid": kernel_pid(km)})
    try:
        for line in sys.stdin:
            req = json.loads(line)
            if req.get("op") != "execute":
                continue
            if not execute(km, kc, req.get("code", ""), bool(req.get("silent"))):
                send({"type": "dead", "reason": "the %s kernel died" % LANGUAGE})
                return
            send({"type": "done"})
    finally:
        kc.stop_channels()
        shutdown(km, tmp)


if __name__ == "__main__":
    main()
