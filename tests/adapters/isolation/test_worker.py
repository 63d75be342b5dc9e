"""The worker script (``audit/adapters/isolation/worker.py``), run on this interpreter with a
test library-side module: no environment is built here (the ``isolated`` tests build one)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from audit.adapters.isolation import client, framing
from tests.adapters.isolation.fake_isolated import SIDE, host_worker


def test_it_imports_no_audit_and_answers_in_frames():
    worker, info = host_worker({"scale": 0.0})
    try:
        assert worker.ready["numpy"] == np.__version__ and info["scale"] == 0.0
        x = np.arange(24.0).reshape(2, 4, 3)
        x[0, 1, 2] = np.nan
        np.testing.assert_array_equal(worker.call(x, 5), np.nansum(x, axis=(1, 2)))
    finally:
        worker.close()


def test_the_worker_loads_nothing_of_audit(tmp_path):
    """Started by hand with ``-I`` from another folder, the worker has loaded no module of
    ``audit`` when its side module is set up (it loads the framing module by file path)."""
    probe = tmp_path / "side.py"
    probe.write_text("import sys\ndef make(p):\n    return None, {'audit': sorted(m for m in "
                     "sys.modules if m == 'audit' or m.startswith('audit.'))}\n")
    proc = subprocess.Popen([sys.executable, "-I", str(client.WORKER_SCRIPT),
                             str(client.FRAMING_MODULE), str(probe)], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        reader = framing.FrameReader(proc.stdout.fileno())
        assert reader.read(timeout=30)[0]["op"] == "ready"
        framing.write_frame(proc.stdin.fileno(), {"op": "init", "params": {}})
        assert reader.read(timeout=30)[0] == {"op": "ok", "info": {"audit": []}}
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()
    assert proc.returncode == 0  # the end of its input: a clean exit


def test_a_library_that_prints_does_not_corrupt_the_frames():
    worker, _ = host_worker({"noisy": True, "scale": 0.0})
    try:
        for _ in range(3):
            np.testing.assert_array_equal(worker.call(np.ones((2, 3, 1)), 1), [3.0, 3.0])
        assert "chatter from" in worker._tail()
    finally:
        worker.close()


def test_a_side_module_that_fails_to_import_is_one_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_library_here\n")
    with pytest.raises(RuntimeError, match="ModuleNotFoundError: No module named "
                                           "'no_such_library_here'"):
        client.Worker(sys.executable, broken, "t:broken", startup_timeout=30)


def test_the_side_module_is_the_one_given():
    assert SIDE.name == "numpy_side.py" and SIDE.is_file()
