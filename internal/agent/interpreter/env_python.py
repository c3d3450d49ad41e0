"""Run by the interpreter (envcode.go) in a python kernel before and after a
cell that has env_vars, in a namespace of its own (nothing is bound in the
user's): ENV is the cell's env_vars before it, None after it.

As E2B's template (its startup_scripts/0001_envs.py): os.environ becomes,
once, a subclass that keeps the values the env_vars replaced until the cell
ends; after it those are restored (or unset where there was none), except
for a key the cell set or deleted itself, which keeps what the cell did."""

import os


def _tracking(environ):
    class SbxEnviron(type(environ)):
        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            self.sbx_saved.pop(key, None)

        def __delitem__(self, key):
            super().__delitem__(key)
            self.sbx_saved.pop(key, None)

    # The same backing dict: anything holding the old object sees the same.
    new = SbxEnviron(environ._data, environ.encodekey, environ.decodekey,
                     environ.encodevalue, environ.decodevalue)
    new.sbx_saved = {}
    return new


if not hasattr(os.environ, "sbx_saved"):
    os.environ = _tracking(os.environ)
if ENV is not None:  # noqa: F821 - given by the caller
    saved = {k: os.environ.get(k) for k in ENV}  # noqa: F821
    os.environ.update(ENV)  # noqa: F821
    os.environ.sbx_saved = saved
else:
    saved, os.environ.sbx_saved = os.environ.sbx_saved, {}
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
