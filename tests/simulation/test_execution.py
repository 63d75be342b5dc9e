import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from audit.mixture import Mixture
from audit.simulation import execution, kernels
from audit.simulation.planning import ChunkPlan
from audit.statistics import Statistic

ROOT = Path(__file__).resolve().parents[2]
P = Mixture([0.2, 0.8], [0.0, 1.0], "laplace", 1.0)
Q = Mixture([1.0], [0.0], "laplace", 1.0)
EDGES = np.linspace(-10, 11, 43)


class _Store:
    """A checkpoint store stand-in holding the chunks given."""

    def __init__(self, done):
        self.done = done
        self.saved = []

    def load(self, b0, b1):
        return (np.ones(3, np.int64), np.ones(3, np.int64)) if (b0, b1) in self.done else None

    def save(self, b0, b1, cp, cq):
        self.saved.append((b0, b1))


def test_jobs_group_consecutive_pending_chunks():
    plan = ChunkPlan(20, 2)  # 10 chunks
    tally = execution.Tally(3, _Store({(4, 6), (6, 8), (14, 16)}))
    jobs = list(execution.iter_jobs(plan, tally, 6))
    assert jobs == [range(0, 2), range(4, 7), range(8, 10)]
    assert tally.counts_p.tolist() == [3, 3, 3]  # the three stored chunks
    assert list(execution.iter_jobs(plan, execution.Tally(3), 2)) == [range(i, i + 1)
                                                                     for i in range(10)]


def test_iter_jobs_is_lazy():
    plan = ChunkPlan.for_blocks(10**12)
    first = next(execution.iter_jobs(plan, execution.Tally(3), 64))
    assert first == range(0, 1)


def test_run_job_returns_each_chunk():
    plan = ChunkPlan(7, 3)  # chunks (0, 3), (3, 6), (6, 7)
    spec = kernels.spec_of(P, Q, Statistic.output(EDGES))
    key = np.uint64(5)
    got = execution.run_job(plan, range(0, 3), execution.Work(key, 6500, 1000, spec, 2, True))
    assert got.shape == (3, 2, EDGES.size + 2)
    for i, (b0, b1) in enumerate(plan):
        rows = kernels.hist_blocks(kernels.Blocks(key, b0, b1, 6500, 1000), spec)
        np.testing.assert_array_equal(got[i], rows.sum(axis=1))
    serial = execution.run_job(plan, range(1, 3),
                               execution.Work(key, 6500, 1000, spec, None, False))
    np.testing.assert_array_equal(serial, got[1:])


_CHILD = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from audit.mixture import Mixture
    from audit.simulation import engine
    from audit.statistics import Statistic
    P = Mixture([0.2, 0.8], [0.0, 1.0], "laplace", 1.0)
    Q = Mixture([1.0], [0.0], "laplace", 1.0)
    st = Statistic.output(engine.default_edges(P, Q, 64))
    busy = sys.argv[1] == "busy"
    engine.run_histograms(P, Q, st, 10**12 if busy else 10**6, 1, n_jobs=2)
    print("finished", flush=True)
    time.sleep(120)
""")


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait(predicate, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("mode", "sig"), [("busy", signal.SIGTERM), ("busy", signal.SIGINT),
                                           ("idle", signal.SIGKILL)])
def test_workers_die_with_their_parent(tmp_path, mode, sig):
    """Busy workers die when the parent gets SIGTERM or Ctrl-C; idle workers left in
    joblib's pool die when the parent is killed outright."""
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen([sys.executable, str(script), mode], env=env, cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        _signal_and_check(proc, mode, sig)


def _signal_and_check(proc, mode, sig):
    try:
        def workers():
            return [c for c in _children(proc.pid)
                    if b"popen_loky_posix" in Path(f"/proc/{c}/cmdline").read_bytes()]

        assert _wait(lambda: len(workers()) == 2, 90), "no loky workers started"
        if mode == "idle":
            assert proc.stdout.readline().strip() == "finished"
        spawned = _children(proc.pid)
        time.sleep(0.5)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        if sig == signal.SIGTERM:
            assert proc.returncode == 128 + signal.SIGTERM
        assert _wait(lambda: not any(_alive(c) for c in spawned), 15), (
            [c for c in spawned if _alive(c)])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_dead_engine_worker_names_the_pending_blocks(monkeypatch):
    """The engine's joblib loop turns a dead worker (loky's TerminatedWorkerError) into one
    WorkerDiedError naming the blocks it was waiting for; the finished chunks are kept."""
    import contextlib

    from joblib.externals.loky.process_executor import TerminatedWorkerError

    from audit.enums import Backend
    from audit.simulation import processes
    from audit.simulation.planning import make_schedule

    @contextlib.contextmanager
    def dies_on_the_second(calls, *, workers, backend):
        def results():
            for i, call in enumerate(calls):
                if i == 1:
                    raise TerminatedWorkerError("The exit codes of the workers are {EXIT(1)}")
                func, args, kwargs = call
                yield func(*args, **kwargs)

        yield results()

    monkeypatch.setattr(processes, "joblib_results", dies_on_the_second)
    schedule = make_schedule(8, n_jobs=2, threads=None, backend=Backend.THREADING,
                             chunk_blocks=2)
    store = _Store(set())
    stat = Statistic.output(EDGES)
    tally = execution.Tally(stat.n_bins, store)
    spec = kernels.spec_of(P, Q, stat)
    with pytest.raises(processes.WorkerDiedError,
                       match=r"^a worker process died during the engine run while the "
                             r"chunk\(s\) of blocks \[\d+, \d+\) were pending "
                             r"\(TerminatedWorkerError; exit codes \{EXIT\(1\)\}\)"):
        execution.execute(schedule, spec, np.uint64(3), 8 * 64, 64, tally)
    assert store.saved and store.saved[0] == (0, store.saved[0][1])
