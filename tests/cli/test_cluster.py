"""The local dask cluster of ``run --backend dask`` and how a run on it stops: the copy of
its processes' standard error (dropped once the run is stopped), and for real, Ctrl-C and
SIGTERM on a run: one ``interrupted:`` line, exit 130 or 143, no traceback, no worker left."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from audit.cli.cluster import HOLD_S, _Forwarder
from tests.conftest import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_the_childrens_stderr_is_copied_until_the_run_is_stopped(capfd):
    forwarder = _Forwarder()
    with forwarder.as_stderr():
        child = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                                  "print('before', file=sys.stderr, flush=True)\n"
                                  "sys.stdin.readline()\n"
                                  "print('after', file=sys.stderr, flush=True)"],
                                 stdin=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        seen = ""
        while "before\n" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
            seen += capfd.readouterr().err
        assert seen == "before\n"  # copied (HOLD_S late)
        forwarder.stopped.set()  # the run was stopped
        child.communicate("go\n", timeout=10)
        time.sleep(HOLD_S + 0.3)
        assert capfd.readouterr().err == ""  # 'after' was drained and dropped
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()


def test_what_came_just_before_the_stop_is_dropped_too(capfd):
    """A worker hit by the same Ctrl-C may print before this process's handler runs: what
    the copy holds (HOLD_S) when the stop comes is dropped."""
    forwarder = _Forwarder()
    with forwarder.as_stderr():
        child = subprocess.Popen([sys.executable, "-c", "import sys\n"
                                  "print('ready', flush=True)\n"
                                  "print('Traceback ...', file=sys.stderr, flush=True)"],
                                 stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "ready\n"
    forwarder.stopped.set()  # well within HOLD_S of the child's line
    child.communicate(timeout=10)
    time.sleep(HOLD_S + 0.3)
    assert capfd.readouterr().err == ""


def _dask_workers(pid: int) -> list:
    """The cluster's worker processes under ``pid`` (multiprocessing's spawned children)."""
    import psutil

    out = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                out.append(child)
        except psutil.Error:
            pass
    return out


@pytest.mark.dask
@pytest.mark.parametrize(("sig", "group", "when"), [
    ("SIGINT", True, "starting"), ("SIGINT", True, "running"), ("SIGTERM", False, "running"),
], ids=["ctrl-c-while-the-cluster-starts", "ctrl-c", "sigterm-to-the-run"])
def test_a_stopped_dask_run_is_one_line_and_leaves_no_worker(tmp_path, sig, group, when):
    """Ctrl-C reaches the whole process group, SIGTERM (``kill PID``) the run alone; either
    way the run ends with 130 or 143 and one interrupted: line, no traceback (the workers
    ignore SIGINT; what they print while the cluster closes is dropped), and the cluster's
    processes are gone. A Ctrl-C while the cluster starts is not lost (it was, when the
    workers' ignored SIGINT was inherited from this process: the run went on)."""
    import signal
    import time

    import psutil

    sig = getattr(signal, sig)
    cfg = tmp_path / "d.toml"
    cfg.write_text('[scenario]\nnoise = "laplace"\nepsilon = 1.0\nquery = "sum"\nd = 2\nn = 10\n'
                   '[missingness]\nkind = "mcar-iid"\nrate = 0.3\n[audit]\n'
                   'trials = 100_000_000_000\nseed = 1\njobs = 2\nbackend = "dask"\n')
    proc = subprocess.Popen([sys.executable, "-m", "audit", "run", str(cfg), "--no-progress",
                             "--max-hours", "1000"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers = []
    try:
        first = proc.stderr.readline()  # printed before the cluster starts
        assert first.startswith("expected duration"), first + proc.communicate(timeout=30)[1]
        deadline = time.monotonic() + 60
        while when == "running" and len(workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = _dask_workers(proc.pid)
        if when == "running":
            assert len(workers) == 2
            time.sleep(1.0)  # the main run under way on them
        (os.killpg if group else os.kill)(proc.pid, sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted: "), err
    if when == "running":  # (while starting, the stop may come before the run's own handler)
        assert lines == ["interrupted: nothing was saved (rerun with --checkpoint DIR to make a "
                         "long run resumable)"], err
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert alive == []
    deadline = time.time() + 30  # and nothing else of the run's group: the nannies' helpers
    while time.time() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
