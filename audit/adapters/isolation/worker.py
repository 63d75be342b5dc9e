"""The worker process of an isolated target: runs in the target's own environment.

Started by :class:`audit.adapters.isolation.client.Worker` as::

    <env>/bin/python -I worker.py <framing.py> <library-side module.py>

It imports nothing of ``audit`` (the environment has no auditor): it loads the framing module
and the library-side module by file path. The library-side module defines
``make(params: dict) -> (release, info)``: ``release(datasets, seed)`` takes a float64 array
(m, n, d) (NaN = missing) and an integer seed in [0, 2^63) and returns the m releases, shape
(m,) or (m, dim); ``info`` is a JSON-serialisable dict (what the library states: its privacy
cost, its version) sent back in the ``ok`` frame.

Standard output is the frame pipe: before anything is imported the original descriptor 1 is
duplicated for the frames and descriptor 1 is pointed at standard error, so whatever the
library prints (from Python or from C) goes to the worker's log, never into a frame. A daemon
thread exits the worker when its parent is gone (the auditor killed by SIGKILL): no orphan.
"""

import importlib.util
import json
import os
import sys
import threading
import time
import traceback


def _own_stdout():
    """The frame pipe: a duplicate of the original standard output, descriptor 1 (and
    ``sys.stdout``) then pointed at standard error."""
    frames = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return frames


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _watch_parent(parent, period=0.5):
    def watch():
        while True:
            time.sleep(period)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def _one_line(exc):
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:2000]


def _serve(framing, library, frames):
    import numpy as np

    reader = framing.FrameReader(0)
    release = None
    while True:
        try:
            header, payload = reader.read()
        except framing.FrameError:  # the auditor closed the pipe: nothing more to do
            return 0
        op = header["op"]
        if op == "exit":
            return 0
        try:
            if op == "init":
                release, info = library.make(header.get("params") or {})
                framing.write_frame(frames, {"op": "ok", "info": info})
            elif op == "call":
                if release is None:
                    raise RuntimeError("call before init")
                datasets = framing.array_of(header, payload)
                out = np.asarray(release(datasets, int(header["seed"])), dtype=np.float64)
                framing.write_frame(frames, {"op": "out"}, out)
            else:
                raise RuntimeError(f"unknown op {op!r}")
        except Exception as exc:  # the library's failure: one line back, the worker stays
            traceback.print_exc(file=sys.stderr)
            framing.write_frame(frames, {"op": "error", "message": _one_line(exc)})


def main(argv):
    frames = _own_stdout()
    _watch_parent(os.getppid())
    framing = _load(argv[1], "_audit_framing")
    try:
        library = _load(argv[2], "_audit_library_side")
        import numpy as np
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        framing.write_frame(frames, {"op": "error", "message": _one_line(exc)})
        return 1
    framing.write_frame(frames, {"op": "ready", "pid": os.getpid(),
                                 "python": sys.version.split()[0], "numpy": np.__version__,
                                 "info": json.loads(json.dumps(getattr(library, "INFO", {})))})
    return _serve(framing, library, frames)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
