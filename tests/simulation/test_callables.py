"""Black-box implementations drawn in chunks: reproducible for any workers, checkpointed,
failures reported with the call that failed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from audit.enums import Backend
from audit.model.missingness import make_missingness
from audit.simulation import processes
from audit.simulation.callables import (
    TASK_BYTES,
    TASK_CALLS,
    CallableRun,
    ImplementationError,
    chunk_generator,
    chunks_per_task,
    iter_chunks,
    probe,
)
from audit.simulation.processes import ResourceCapWarning, Terminated

ROOT = Path(__file__).resolve().parents[2]

Z = np.zeros((5, 2))
ZP = Z.copy()
ZP[0] = 1.0
MECH = make_missingness("mcar-iid", rate=0.4)


class NoisyMean:
    """A picklable mechanism: mean of the observed entries plus Laplace noise; NaN when
    nothing is observed. Counts its calls (per process)."""

    name = "noisy-mean"
    calls = 0

    def __call__(self, data, rng):
        type(self).calls += 1
        return np.nanmean(data) + rng.laplace() if np.isfinite(data).any() else np.nan

    batch = None


def _run(impl=None, trials=250, chunk=40, key=7, dim=0):
    return CallableRun(impl or NoisyMean(), Z, ZP, MECH, chunk, trials, key, dim)


def _outputs(run, **kw):
    chunks = list(iter_chunks(run, **kw))
    return (np.concatenate([c[1] for c in chunks]), np.concatenate([c[2] for c in chunks]),
            [c[0] for c in chunks])


def test_chunks_arrive_in_order_and_cover_every_call():
    p, q, order = _outputs(_run())
    assert order == list(range(7)) and p.shape == q.shape == (250,)
    assert np.isnan(p).any() == np.isnan(q).any() or True  # NaN is a value like any other


def test_same_seed_same_outputs_for_any_number_of_workers():
    p1, q1, _ = _outputs(_run())
    p2, q2, _ = _outputs(_run(), n_jobs=2)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(q1, q2)
    p3, _, _ = _outputs(_run(key=8))
    assert not np.array_equal(np.nan_to_num(p1), np.nan_to_num(p3))


def test_every_chunk_has_its_own_stream():
    a = chunk_generator(1, 0, 3).random(4)
    assert not np.array_equal(a, chunk_generator(1, 1, 3).random(4))
    assert not np.array_equal(a, chunk_generator(1, 0, 4).random(4))
    np.testing.assert_array_equal(a, chunk_generator(1, 0, 3).random(4))


def test_masks_reach_the_implementation_as_nan():
    seen = []

    def record(data, rng):
        seen.append(np.isnan(data).mean())
        return 0.0

    list(iter_chunks(_run(record, trials=200, chunk=200)))
    assert 0.3 < np.mean(seen) < 0.5  # mcar-iid at rate 0.4


def test_checkpoint_resume_does_not_call_again(tmp_path):
    first, _, _ = _outputs(_run(), checkpoint=tmp_path)
    NoisyMean.calls = 0
    again, _, _ = _outputs(_run(), checkpoint=tmp_path)
    assert NoisyMean.calls == 0
    np.testing.assert_array_equal(first, again)


def test_a_failure_mid_run_keeps_the_finished_chunks(tmp_path):
    state = {"n": 0}

    def flaky(data, rng):
        state["n"] += 1
        if state["n"] > 200:
            raise RuntimeError("library exploded")
        return 1.0

    with pytest.raises(ImplementationError, match=r"raised RuntimeError: library exploded"):
        list(iter_chunks(_run(flaky), checkpoint=tmp_path))
    assert len(list(tmp_path.glob("*.npz"))) == 2  # chunks 0 and 1 (80 calls each side)


@pytest.mark.parametrize(("func", "needle"), [
    (lambda data, rng: "ten", "non-numeric value"),
    (lambda data, rng: np.zeros((2, 2)), "shape"),
    (lambda data, rng: 1 / 0, "ZeroDivisionError"),
])
def test_probe_names_the_first_failing_call(func, needle):
    with pytest.raises(ImplementationError, match=needle) as info:
        probe(func, Z, MECH, 0)
    assert "first call" in str(info.value)


def test_probe_finds_the_output_dimension():
    assert probe(lambda data, rng: 1.0, Z, MECH, 0) == 0
    assert probe(lambda data, rng: np.array([1.0]), Z, MECH, 0) == 0
    assert probe(lambda data, rng: np.arange(3.0), Z, MECH, 0) == 3


def test_a_changing_output_shape_is_an_error():
    state = {"n": 0}

    def shifty(data, rng):
        state["n"] += 1
        return 1.0 if state["n"] < 10 else np.arange(2.0)

    with pytest.raises(ImplementationError, match=r"returned shape \(2,\) on call \d+"):
        list(iter_chunks(_run(shifty)))


def test_an_unpicklable_mechanism_is_refused_for_workers():
    import threading

    lock = threading.Lock()

    def locked(data, rng):
        with lock:
            return 0.0

    with pytest.raises(ImplementationError, match="cannot be sent to worker processes"):
        list(iter_chunks(_run(locked), n_jobs=2))


def test_the_batched_form_is_used_and_reproducible():
    class Batched(NoisyMean):
        def batch(self, datasets, rng):
            return np.nanmean(datasets.reshape(len(datasets), -1), axis=1) + rng.laplace(
                size=len(datasets))

    run = CallableRun(Batched(), Z, ZP, MECH, 40, 250, 7, 0)
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            a, _, _ = _outputs(run)
            b, _, _ = _outputs(run)
    np.testing.assert_array_equal(a, b)


def test_outputs_identical_in_process_over_loky_and_threads():
    ref = _outputs(_run())
    for kw in ({"n_jobs": 2}, {"n_jobs": -1}, {"n_jobs": 2, "backend": "threading"},
               {"n_jobs": 2, "backend": Backend.LOKY}):
        got = _outputs(_run(), **kw)
        np.testing.assert_array_equal(ref[0], got[0])
        np.testing.assert_array_equal(ref[1], got[1])
        assert got[2] == list(range(7)), kw


def test_tasks_of_many_chunks_change_no_output():
    """200 chunks of 10 calls over 2 workers go 25 to a task: same outputs, same order."""
    run = _run(trials=2000, chunk=10)
    assert chunks_per_task(run, 2) == 25
    ref = _outputs(run)
    for kw in ({"n_jobs": 2}, {"n_jobs": 2, "backend": "threading"}):
        got = _outputs(run, **kw)
        np.testing.assert_array_equal(ref[0], got[0])
        np.testing.assert_array_equal(ref[1], got[1])
        assert got[2] == list(range(200)), kw


def test_chunks_per_task_by_calls_bytes_and_balance():
    big = CallableRun(NoisyMean(), Z, ZP, MECH, 100, 10**9, 1, 0)
    assert chunks_per_task(big, 2) == TASK_CALLS // 100  # calls
    wide = CallableRun(NoisyMean(), Z, ZP, MECH, 100, 10**9, 1, 10**4)
    assert chunks_per_task(wide, 2) == TASK_BYTES // (16 * 100 * 10**4)  # raw bytes
    assert chunks_per_task(_run(trials=400, chunk=10), 2) == 5  # 40 chunks, 4 tasks each
    assert chunks_per_task(_run(trials=10, chunk=10), 2) == 1  # never below one chunk
    huge = CallableRun(NoisyMean(), Z, ZP, MECH, 10**6, 10**9, 1, 10**4)
    assert chunks_per_task(huge, 2) == 1  # one chunk over the byte budget is still one


class _Where:
    """A picklable reduction: the bin of each output and the process that binned it."""

    def __call__(self, out):
        bins = np.searchsorted([-1.0, 0.0, 1.0], np.nan_to_num(out, nan=9.0))
        return np.stack([bins, np.full(bins.shape, os.getpid())], axis=1)


@pytest.mark.parametrize("checkpoint", [False, True])
def test_reduce_runs_in_the_workers_unless_chunks_are_saved(tmp_path, checkpoint):
    run = _run(trials=2000, chunk=10)
    raw = list(iter_chunks(run))
    where = tmp_path if checkpoint else None
    got = list(iter_chunks(run, n_jobs=2, reduce=_Where(), checkpoint=where))
    assert [c[0] for c in got] == list(range(200))
    for (_, p, q), (_, rp, rq) in zip(raw, got, strict=True):
        np.testing.assert_array_equal(rp[:, 0], _Where()(p)[:, 0])
        np.testing.assert_array_equal(rq[:, 0], _Where()(q)[:, 0])
    pids = {int(pid) for _, rp, rq in got for pid in np.concatenate([rp[:, 1], rq[:, 1]])}
    if checkpoint:  # raw outputs came back to be saved, and were binned here
        assert pids == {os.getpid()}
        assert len(list(tmp_path.glob("*.npz"))) == 200
    else:
        assert os.getpid() not in pids and len(pids) >= 1
    here = list(iter_chunks(run, reduce=_Where()))  # in this process
    assert {int(x) for _, rp, _ in here for x in rp[:, 1]} == {os.getpid()}


class _HeavyWhere(_Where):
    """The same reduction carrying 8 MB it does not use: more than the raw outputs of a
    task, so it is applied in the calling process."""

    def __init__(self):
        self.payload = np.zeros(10**6)


def test_a_reduce_heavier_than_a_tasks_outputs_runs_here():
    run = _run(trials=2000, chunk=10)
    raw = list(iter_chunks(run))
    got = list(iter_chunks(run, n_jobs=2, reduce=_HeavyWhere()))
    for (_, p, q), (_, rp, rq) in zip(raw, got, strict=True):
        np.testing.assert_array_equal(rp[:, 0], _Where()(p)[:, 0])
        np.testing.assert_array_equal(rq[:, 0], _Where()(q)[:, 0])
    assert {int(x) for _, rp, _ in got for x in rp[:, 1]} == {os.getpid()}


class _FailsOnShortChunks:
    """A picklable batched mechanism that raises on a chunk of fewer than 10 calls (a run's
    last, shorter chunk)."""

    name = "fails-on-short-chunks"

    def __call__(self, data, rng):
        return rng.random()

    def batch(self, datasets, rng):
        if datasets.shape[0] < 10:
            raise RuntimeError("short chunk")
        return rng.random(datasets.shape[0])


def test_with_workers_a_failure_keeps_every_chunk_that_reached_the_caller(tmp_path):
    """With a checkpoint and workers, every chunk handed to the caller before the failing
    201st chunk raised is on disk (joblib stops at the first exception, so chunks computed
    ahead of it and not yet handed over are not)."""
    run = _run(_FailsOnShortChunks(), trials=2005, chunk=10)
    seen = []
    with pytest.raises(ImplementationError, match=r"short chunk \(dataset z, chunk 200"):
        for c, _, _ in iter_chunks(run, n_jobs=2, checkpoint=tmp_path):
            seen.append(c)
    assert seen == list(range(len(seen))) and len(seen) < 201
    assert len(list(tmp_path.glob("*.npz"))) == len(seen)


def test_n_jobs_over_the_cpus_warns_once_at_the_caller(monkeypatch):
    monkeypatch.setattr(processes, "usable_cpus", lambda: 2)
    ref = _outputs(_run())
    with pytest.warns(ResourceCapWarning,
                      match=r"^n_jobs=1000 capped at 2, the CPUs this process may use$") as w:
        chunks = iter_chunks(_run(), n_jobs=1000)
    assert len(w) == 1 and w[0].filename == __file__
    np.testing.assert_array_equal(np.concatenate([c[1] for c in chunks]), ref[0])


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"backend": "cuda"}, "got backend='cuda'"),
    ({"backend": "spark"}, "backend must be one of"),
    ({"n_jobs": 0}, "n_jobs must be an integer >= 1 or -1, got n_jobs=0"),
    ({"n_jobs": 1.5}, "n_jobs must be an integer"),
    ({"on_chunk": 3}, "on_chunk must be callable"),
    ({"reduce": "bins"}, "reduce must be callable or None, got reduce='bins'"),
])
def test_bad_arguments_are_refused_when_called(kwargs, needle):
    NoisyMean.calls = 0
    with pytest.raises(ValueError, match=needle):
        iter_chunks(_run(), **kwargs)  # no next(): refused before any chunk runs
    assert NoisyMean.calls == 0
    with pytest.raises(ValueError, match="run must be a CallableRun"):
        iter_chunks("run")


def test_threads_need_no_pickling():
    import threading

    lock = threading.Lock()

    def locked(data, rng):
        with lock:
            return rng.random()

    ref = _outputs(_run(locked))
    got = _outputs(_run(locked), n_jobs=2, backend="threading")
    np.testing.assert_array_equal(ref[0], got[0])


@pytest.mark.dask
@pytest.mark.parametrize("processes_", [False, True])
def test_dask_outputs_identical_to_loky_and_in_process(processes_):
    distributed = pytest.importorskip("distributed")
    ref = _outputs(_run())
    loky = _outputs(_run(), n_jobs=2)
    # In-process workers talk over inproc:// (no host); process workers over loopback; the
    # dashboard on a free port, not on a shared machine's 8787.
    net = {"host": "127.0.0.1"} if processes_ else {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes_,
                                  dashboard_address=":0", **net) as cluster, \
            distributed.Client(cluster):
        dask = _outputs(_run(), n_jobs=2, backend="dask")
        every = _outputs(_run(), n_jobs=-1, backend=Backend.DASK)
    for got in (loky, dask, every):
        np.testing.assert_array_equal(ref[0], got[0])
        np.testing.assert_array_equal(ref[1], got[1])
        assert got[2] == list(range(7))


_NO_NUMBA = textwrap.dedent("""
    import sys
    import numpy as np
    from audit.model.missingness import make_missingness
    from audit.simulation.callables import CallableRun, iter_chunks

    def mechanism(data, rng):
        # a worker that had numba loaded would release 10 + U(0, 1): the parent sees it
        return float(np.nansum(data)) + rng.random() + (10.0 if "numba" in sys.modules else 0)

    z = np.zeros((4, 1))
    zp = z.copy()
    zp[0] = 0.5
    run = CallableRun(mechanism, z, zp, make_missingness("mcar-iid", rate=0.3), 25, 100, 3, 0)
    out = {}
    for jobs in (1, 2):
        chunks = list(iter_chunks(run, n_jobs=jobs))
        out[jobs] = np.concatenate([c[1] for c in chunks] + [c[2] for c in chunks])
    assert np.array_equal(out[1], out[2]) and out[1].size == 200
    assert out[1].max() < 2.0, out[1].max()
    print("numba" in sys.modules)
""")


def test_a_black_box_run_never_imports_numba(tmp_path):
    script = tmp_path / "black_box.py"
    script.write_text(_NO_NUMBA)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


_CHILD = textwrap.dedent("""
    import signal, sys, time
    import numpy as np
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from audit.model.missingness import make_missingness
    from audit.simulation.callables import CallableRun, iter_chunks

    def slow(data, rng):
        time.sleep(0.002)
        return rng.random()

    busy = sys.argv[1] == "busy"
    run = CallableRun(slow, np.zeros((3, 1)), np.ones((3, 1)),
                      make_missingness("mcar-iid", rate=0.3), 50, 10**7 if busy else 400, 1, 0)
    for _ in iter_chunks(run, n_jobs=2):
        pass
    print("finished", flush=True)
    time.sleep(120)
""")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("mode", "sig"), [("busy", signal.SIGTERM), ("idle", signal.SIGKILL)])
def test_black_box_workers_die_with_their_parent(tmp_path, mode, sig):
    """The sampler's loky workers die on the parent's SIGTERM (busy) or SIGKILL (idle), by
    the engine's plumbing (audit.simulation.processes)."""
    from tests.simulation.test_execution import _signal_and_check

    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen([sys.executable, str(script), mode], env=env, cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        _signal_and_check(proc, mode, sig)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated])
def test_a_stop_in_this_process_is_not_the_implementations_failure(stop):
    """Ctrl-C or SIGTERM (Terminated) while the calling process runs an implementation's call
    propagates as itself; raised in a worker, it can only be the implementation's own."""
    from audit.simulation.callables import ImplementationError, _call

    def release(x):
        raise stop()

    with pytest.raises(stop):
        _call(release, (1,), "mech", "(pilot)", in_worker=False)
    with pytest.raises(ImplementationError, match=f"raised {stop.__name__}"):
        _call(release, (1,), "mech", "(pilot)", in_worker=True)
    assert Terminated().code == 143
