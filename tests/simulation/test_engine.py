import hashlib
import json
import os
import time
from pathlib import Path

import numba
import numpy as np
import pytest

from audit.enums import Backend
from audit.simulation import engine, execution
from audit.simulation.planning import ResourceCapWarning, usable_cpus
from audit.statistics import Statistic, histogram
from tests.simulation.sample_laws import L3, M3, P3, PG, PV, Q3, QG, QV, P, Q

STAT = Statistic.output(engine.default_edges(P, Q, 64))
EV = np.linspace(-4, 4, 41)
ENU = np.array([-3.0, -1.0, -0.5, 0.0, 0.1, 0.3, 1.0, 2.5, 6.0])
T, BT = 50_000, 4096


def _eq(a, b):
    return np.array_equal(a.counts_p, b.counts_p) and np.array_equal(a.counts_q, b.counts_q)


def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


# Recorded with the first build's kernels; the Gaussian digests were re-recorded once, when the
# Box–Muller spare normal stopped being discarded (it now serves the next coordinate or trial),
# which changed the Gaussian streams. Laplace streams have never changed.
REFERENCE_RUNS = {
    "laplace-output": (lambda: engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT),
                       "8fb121f723ae225e"),
    "laplace-output-default-blocks": (lambda: engine.run_histograms(P, Q, STAT, 200_003, 11),
                                      "c0371697425e2ba5"),
    "laplace-output-nonuniform": (
        lambda: engine.run_histograms(P, Q, Statistic.output(ENU), T, 5, block_trials=BT),
        "eed7f5c700eb96c8"),
    "gaussian-output": (
        lambda: engine.run_histograms(PG, QG, Statistic.output(engine.default_edges(PG, QG, 200)),
                                      T, 3, block_trials=BT, threads=2, chunk_blocks=2),
        "3ecc5e329a7876cd"),
    "gaussian-output-seedsequence": (
        lambda: engine.run_histograms(PG, QG, Statistic.output(engine.default_edges(PG, QG, 200)),
                                      T, np.random.SeedSequence(123), block_trials=1000),
        "fde61678804e2099"),
    "laplace-linear-scalar": (
        lambda: engine.run_histograms(P, Q, Statistic.linear([2.0], -1.0, EV), T, 4,
                                      block_trials=BT),
        "e468fb33f895b55b"),
    "gaussian-llr-dim2": (
        lambda: engine.run_histograms(PV, QV, Statistic.llr(PV, QV, EV), T, 3, block_trials=BT),
        "93f20c81b60f946f"),
    "gaussian-linear-dim2": (
        lambda: engine.run_histograms(PV, QV, Statistic.linear([0.3, -1.2], 0.5, EV), T, 3,
                                      block_trials=BT, threads=2, chunk_blocks=3),
        "5b1a4ec31843a1e6"),
    "gaussian-llr-dim3": (
        lambda: engine.run_histograms(P3, Q3, Statistic.llr(P3, Q3, EV), T, 3, block_trials=BT),
        "dad443f87825ab39"),
    "gaussian-linear-dim3": (
        lambda: engine.run_histograms(P3, Q3, Statistic.linear([1.0, 0.5, -2.0], 0.0, EV), T, 3,
                                      block_trials=BT),
        "cb9307cfd92b5373"),
    "laplace-llr-dim3": (
        lambda: engine.run_histograms(L3, M3, Statistic.llr(L3, M3, EV), T, 3, block_trials=BT,
                                      n_jobs=2, backend="threading"),
        "68fc552b0b71eca9"),
    "gaussian-llr-other-laws": (
        lambda: engine.run_histograms(PV, QV, Statistic.llr(QV, PV, EV), T, 8, block_trials=BT),
        "39aec52e43d5d9d2"),
}

REFERENCE_SAMPLES = {
    "laplace-scalar": (P, 0, "1f9060a330da07f0"),
    "laplace-scalar-side1": (Q, 1, "ba815f189edec51a"),
    "gaussian-scalar": (PG, 0, "f446e997b26a7ce8"),
    "gaussian-dim2": (PV, 1, "758952050d66733c"),
    "gaussian-dim3": (P3, 0, "d89490f833839b4f"),
    "laplace-dim3": (L3, 1, "2700270585e64f88"),
}


@pytest.mark.parametrize("name", sorted(REFERENCE_RUNS))
def test_reference_counts_never_change(name):
    run, digest = REFERENCE_RUNS[name]
    h = run()
    assert h.counts_p[-1] == h.counts_q[-1] == 0  # the NaN bin: laws never draw NaN
    assert _digest(h.counts_p[:-1], h.counts_q[:-1]) == digest


@pytest.mark.parametrize("name", sorted(REFERENCE_SAMPLES))
def test_reference_samples_never_change(name):
    M, side, digest = REFERENCE_SAMPLES[name]
    assert _digest(engine.sample_outputs(M, 20_001, 13, side=side, block_trials=3000)) == digest


def test_reference_tiny_run_literal():
    h = engine.run_histograms(P, Q, STAT, 17, 0)
    assert h.counts_p.nonzero()[0].tolist() == [29, 30, 31, 32, 33, 34, 36]
    assert h.counts_p[h.counts_p > 0].tolist() == [1, 3, 3, 4, 2, 3, 1]
    assert h.counts_q.nonzero()[0].tolist() == [29, 30, 31, 32, 33]
    assert h.counts_q[h.counts_q > 0].tolist() == [1, 4, 6, 5, 1]


def test_counts_and_thread_chunk_invariance():
    ref = engine.run_histograms(P, Q, STAT, T, 7, threads=1, block_trials=BT)
    assert ref.counts_p.sum() == T and ref.counts_q.sum() == T
    assert ref.counts_p.dtype == np.int64 and ref.counts_p.shape == (STAT.edges.size + 2,)
    old = numba.get_num_threads()
    two = engine.run_histograms(P, Q, STAT, T, 7, threads=2, block_trials=BT)
    assert numba.get_num_threads() == old
    four = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, chunk_blocks=4)
    thr = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, n_jobs=2,
                                backend="threading", chunk_blocks=3)
    assert _eq(ref, two) and _eq(ref, four) and _eq(ref, thr)
    other = engine.run_histograms(P, Q, STAT, T, 8, block_trials=BT)
    assert not _eq(ref, other)


@pytest.mark.parametrize("chunk_blocks", [1, 2, 5, 13, 64])
@pytest.mark.parametrize("threads", [1, 2])
def test_chunkings_and_threads_identical(chunk_blocks, threads):
    stat = Statistic.llr(P3, Q3, EV)
    ref = engine.run_histograms(P3, Q3, stat, T, 2, block_trials=BT)
    got = engine.run_histograms(P3, Q3, stat, T, 2, block_trials=BT, threads=threads,
                                chunk_blocks=chunk_blocks)
    assert _eq(ref, got)


def test_threading_backend_member_identical():
    ref = engine.run_histograms(PV, QV, Statistic.llr(PV, QV, EV), T, 3, block_trials=BT)
    got = engine.run_histograms(PV, QV, Statistic.llr(PV, QV, EV), T, 3, block_trials=BT,
                                n_jobs=2, backend=Backend.THREADING, chunk_blocks=2)
    assert _eq(ref, got) and got.workers == 2


def test_loky_processes_identical():
    ref = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT)
    par = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, n_jobs=2, chunk_blocks=4)
    assert _eq(ref, par) and par.workers == min(2, usable_cpus())


def _loky_workers_of(pid: int) -> list[int]:
    """Live loky worker processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"popen_loky_posix" in cmd:
            out.append(int(d.name))
    return out


def test_n_jobs_capped_at_usable_cpus():
    """n_jobs=1000 runs at most usable_cpus() workers, says so once, and counts the same."""
    ref = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT)
    with pytest.warns(ResourceCapWarning, match="n_jobs=1000 capped") as caught:
        got = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, n_jobs=1000)
    assert len(caught) == 1 and caught[0].filename == __file__  # points at the caller
    assert _eq(ref, got)
    assert got.workers <= usable_cpus() and any("n_jobs=1000" in n for n in got.notes)
    if Path("/proc/self/stat").exists():
        assert len(_loky_workers_of(os.getpid())) <= usable_cpus()


def test_n_jobs_capped_at_chunks_without_warning():
    got = engine.run_histograms(P, Q, STAT, 1000, 7, n_jobs=2, backend="threading")
    ref = engine.run_histograms(P, Q, STAT, 1000, 7)
    assert _eq(ref, got) and got.workers == 1
    assert got.notes == ("2 workers capped at the run's 1 chunk",)


def test_huge_run_is_planned_lazily(monkeypatch):
    """trials = 10^15 (1.5e10 blocks) starts its first chunk at once: no list of chunks."""
    class Stop(Exception):
        pass

    calls = []

    def first_job_only(plan, job, *args):
        calls.append((plan[job[0]][0], plan[job[-1]][1]))
        raise Stop

    monkeypatch.setattr(execution, "run_job", first_job_only)
    start = time.perf_counter()
    with pytest.raises(Stop):
        engine.run_histograms(P, Q, STAT, 10**15, 0)
    assert time.perf_counter() - start < 5.0
    assert calls == [(0, 64)]


def test_prefix_property_and_sample_outputs():
    """Blocks are the unit: a longer run's counts contain the shorter run's draws, and
    sample_outputs reproduces side 0 exactly."""
    x = engine.sample_outputs(P, T, 7, block_trials=BT)
    h = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT)
    np.testing.assert_array_equal(histogram(x, STAT.edges), h.counts_p)
    y = engine.sample_outputs(Q, T, 7, side=1, block_trials=BT)
    np.testing.assert_array_equal(histogram(y, STAT.edges), h.counts_q)
    longer = engine.sample_outputs(P, T + 5000, 7, block_trials=BT)
    np.testing.assert_array_equal(longer[:T], x)


def test_linear_and_llr_statistics_match_numpy():
    w = np.array([0.3, -1.2])
    lin_stat = Statistic.linear(w, 0.5, EV)
    llr_stat = Statistic.llr(PV, QV, EV)
    lin = engine.run_histograms(PV, QV, lin_stat, T, 3, block_trials=BT)
    llr = engine.run_histograms(PV, QV, llr_stat, T, 3, block_trials=BT)
    xp = engine.sample_outputs(PV, T, 3, block_trials=BT)
    xq = engine.sample_outputs(QV, T, 3, side=1, block_trials=BT)
    np.testing.assert_array_equal(lin.counts_p, lin_stat.counts(xp))
    np.testing.assert_array_equal(lin.counts_q, lin_stat.counts(xq))
    # LLR rounding can differ from scipy's logsumexp in the last bits: allow bin-edge ties.
    for counts, x in ((llr.counts_p, xp), (llr.counts_q, xq)):
        assert np.abs(counts - llr_stat.counts(x)).sum() <= 4


def test_progress_bar_shows_the_label(capsys):
    engine.run_histograms(P, Q, STAT, 20_000, 1, block_trials=BT, progress=True,
                          label="main run")
    err = capsys.readouterr().err
    assert "main run" in err and "chunk" in err


def test_to_dict_is_json():
    h = engine.run_histograms(PV, QV, Statistic.linear([1.0, 1.0], 0.0, [-1, 0, 1]), 1000, 2)
    d = json.loads(json.dumps(h.to_dict()))
    assert d["counts_p"] == h.counts_p.tolist() and d["trials"] == 1000 and d["seed"] == 2
    assert d["statistic"]["kind"] == "linear" and d["block_trials"] == 65536


def test_default_edges_cover_shifts():
    e = engine.default_edges(P, Q, 100)
    assert e[0] <= -25 and e[-1] >= 28 and e.size == 101


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"trials": 0}, "trials must be an integer >= 1"),
        ({"trials": 1.5}, "trials must be an integer"),
        ({"statistic": Statistic.output([0.0, 1.0]), "P": PV, "Q": QV}, "scalar outputs"),
        ({"statistic": Statistic.linear([1.0, 2.0, 3.0], 0.0, [0, 1]), "P": PV, "Q": QV},
         "weights must have length"),
        ({"statistic": Statistic.llr(P3, Q3, [0, 1]), "P": PV, "Q": QV}, "ExactLLR laws"),
        ({"Q": QV}, "same noise"),
        ({"P": PV, "Q": P3, "statistic": Statistic.llr(PV, QV, [0, 1])}, "same output dim"),
        ({"P": "P"}, "P must be an output law"),
        ({"n_jobs": 0}, "n_jobs must be"),
        ({"n_jobs": -2}, "n_jobs must be"),
        ({"threads": 0}, "threads must be"),
        ({"backend": "mpi"}, "backend must be one of"),
        ({"block_trials": 0}, "block_trials must be"),
        ({"seed": -1}, "seed must be"),
        ({"statistic": "x"}, "statistic must be"),
        ({"chunk_blocks": 100}, "chunk_blocks must be in"),
        ({"progress": 1}, "progress must be a bool"),
        ({"label": 3}, "label must be a str"),
        ({"checkpoint": __file__}, "checkpoint must be a directory"),
    ],
)
def test_invalid_inputs_fail_before_work(kwargs, match, monkeypatch):
    def boom(*a, **k):  # pragma: no cover - must not run
        raise AssertionError("work started")

    monkeypatch.setattr(execution, "run_job", boom)
    args = {"P": P, "Q": Q, "statistic": STAT, "trials": 100, "seed": 0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        engine.run_histograms(args.pop("P"), args.pop("Q"), args.pop("statistic"),
                              args.pop("trials"), args.pop("seed"), **args)


@pytest.mark.parametrize(("kwargs", "match"), [({"n": 0}, "n must be an integer"),
                                               ({"side": 2}, "side must be in"),
                                               ({"M": "x"}, "M must be")])
def test_sample_outputs_invalid(kwargs, match):
    args = {"M": P, "n": 10, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=match):
        engine.sample_outputs(args.pop("M"), args.pop("n"), args.pop("seed"), **args)


@pytest.mark.parametrize("bad", [[1.0], [0.0, 0.0], [0.0, np.inf], [[0.0, 1.0]]])
def test_bad_edges(bad):
    with pytest.raises(ValueError, match="edges"):
        Statistic.output(bad)


@pytest.mark.dask
@pytest.mark.parametrize("processes", [False, True])
def test_dask_backend_identical(processes):
    distributed = pytest.importorskip("distributed")
    ref = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT)
    # In-process workers talk over inproc:// (no host); process workers over loopback. The
    # scheduler's HTTP server always listens: on a free port, not on a shared machine's 8787.
    net = {"host": "127.0.0.1"} if processes else {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                                  dashboard_address=":0", **net) as cluster, \
            distributed.Client(cluster):
        got = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, n_jobs=2,
                                    backend="dask", chunk_blocks=3)
    assert _eq(ref, got)


@pytest.mark.slow
def test_large_run_identical_across_threads():
    a = engine.run_histograms(P, Q, STAT, 20_000_000, 1, threads=1)
    b = engine.run_histograms(P, Q, STAT, 20_000_000, 1, threads=2, chunk_blocks=7)
    assert _eq(a, b)


def test_provenance_names_numba_and_the_kernel_code():
    from audit.simulation.checkpoints import CODE_TAG

    prov = engine.provenance()
    assert prov == {"numba": numba.__version__, "kernel_code": CODE_TAG}


def test_importing_the_engine_does_not_import_numba():
    import subprocess
    import sys

    code = "import sys, audit.simulation.engine; print('numba' in sys.modules)"
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=root))
    assert out.stdout.strip() == "False"
