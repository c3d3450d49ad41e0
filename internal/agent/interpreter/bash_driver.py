"""sbx code-interpreter driver for bash contexts.

Started by the Go server (internal/agent/interpreter) as the sandbox user.
One persistent bash process holds the state (variables, functions, cwd).
Each cell is written to a file and sourced; a random marker printed to
stdout and stderr after it delimits the cell's output, which is streamed as
it arrives. A non-zero exit status of the cell is reported as an error.

Same line protocol as kernel_driver.py: requests on stdin, events on fd 3.
SIGINT (sent by the server to the process group) interrupts the running
command; the driver itself ignores it.
"""
import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile

EVENTS = os.fdopen(3, "w", buffering=1, encoding="utf-8", errors="replace")
MARK = "__sbx_" + secrets.token_hex(16) + "__"


def send(obj):
    EVENTS.write(json.dumps(obj) + "\n")
    EVENTS.flush()


class Stream:
    """Output of one bash pipe up to the marker, emitted as it arrives."""

    def __init__(self, name, f):
        self.name, self.f, self.buf, self.status = name, f, "", None

    def feed(self, data, silent):
        self.buf += data
        i = self.buf.find(MARK)
        if i < 0:
            keep = len(MARK) - 1
            text, self.buf = self.buf[:-keep] if len(self.buf) > keep else "", self.buf[-keep:]
            self.emit(text, silent)
            return False
        nl = self.buf.find("\n", i)
        if nl < 0:
            return False
        self.emit(self.buf[:i], silent)
        self.status = self.buf[i + len(MARK):nl].strip()
        self.buf = self.buf[nl + 1:]
        return True

    def emit(self, text, silent):
        if text and not silent:
            send({"type": self.name, "text": text})


def run(bash, streams, sel, cell, code, silent):
    with open(cell, "w", encoding="utf-8") as f:
        f.write(code + "\n")
    bash.stdin.write(f'source {cell}\nprintf "%s %d\\n" {MARK} $?\nprintf "%s\\n" {MARK} >&2\n')
    bash.stdin.flush()
    pending = set(streams)
    while pending:
        for key, _ in sel.select():
            s = key.data
            data = os.read(s.f.fileno(), 65536)
            if not data:
                return None
            if s.feed(data.decode("utf-8", "replace"), silent):
                pending.discard(s)
    return streams[0].status


def main():
    signal.signal(signal.SIGINT, lambda *_: None)
    bash = subprocess.Popen(["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    streams = [Stream("stdout", bash.stdout), Stream("stderr", bash.stderr)]
    sel = selectors.DefaultSelector()
    for s in streams:
        sel.register(s.f, selectors.EVENT_READ, s)
    fd, cell = tempfile.mkstemp(prefix="sbx-cell-", suffix=".sh")
    os.close(fd)
    bash.stdin.write("trap 'return 130 2>/dev/null' INT\n")
    send({"type": "ready"})
    count = 0
    try:
        for line in sys.stdin:
            req = json.loads(line)
            if req.get("op") != "execute":
                continue
            silent = bool(req.get("silent"))
            if not silent:
                count += 1
                send({"type": "count", "count": count})
            status = run(bash, streams, sel, cell, req.get("code", ""), silent)
            if status is None:
                send({"type": "dead", "reason": "bash exited"})
                return
            if status not in ("", "0") and not silent:
                send({"type": "error", "name": "CommandExitError", "value": "exit status " + status,
                      "traceback": []})
            send({"type": "done"})
    finally:
        os.unlink(cell)
        bash.kill()


if __name__ == "__main__":
    main()
