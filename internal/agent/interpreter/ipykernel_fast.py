"""Run by kernel_driver.py inside each python kernel at start (ipykernel's
code_to_run, in a namespace of its own: nothing is bound in the user's).

It removes two of ipykernel's thread round trips per cell that change
nothing for our one client. Under gVisor each wake of another thread is
about a millisecond on a loaded machine, and ipykernel 6 makes several per
cell:
- OutStream.flush hands the flush to the IOPub thread and waits for it,
  even with nothing to send. The kernel flushes stdout and stderr twice per
  cell (before the execute_reply and before idle): four round trips for a
  cell that printed nothing. Here a flush with nothing written since the
  last one returns at once; one with output is the original.
- Every shell request first waits for the control thread to drain the
  control queue (ordering control before shell messages). The driver never
  uses the control channel (interrupts are SIGINT, shutdown is a kill), so
  the wait is skipped.
Each patch applies only where ipykernel has what it expects; elsewhere the
kernel runs as shipped."""


def _patch_flush():
    from ipykernel.iostream import OutStream

    original = OutStream.flush

    def flush(self):
        lock, buf = getattr(self, "_buffer_lock", None), getattr(self, "_buffer", None)
        if lock is not None and buf is not None and not getattr(self, "_flush_pending", True) \
                and not getattr(self, "_subprocess_flush_pending", True):
            with lock:
                if buf is self._buffer and buf.tell() == 0:
                    return
        original(self)

    OutStream.flush = flush


def _patch_control_wait():
    from ipykernel.kernelbase import Kernel

    if not hasattr(Kernel, "_flush_control_queue"):
        return

    async def _flush_control_queue(self):
        return None

    Kernel._flush_control_queue = _flush_control_queue


for _patch in (_patch_flush, _patch_control_wait):
    try:
        _patch()
    except Exception:  # noqa: BLE001 - an unknown ipykernel keeps its own code
        pass
