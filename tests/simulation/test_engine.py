import json

import numba
import numpy as np
import pytest

from audit.mixture import Mixture
from audit.simulation import engine

P = Mixture([0.2, 0.5, 0.3], [0.0, 1.0, 3.0], "laplace", 1.0)
Q = Mixture([1.0], [0.0], "laplace", 1.0)
PV = Mixture([0.6, 0.4], [[0.0, 0.0], [1.0, -1.0]], "gaussian", 0.7)
QV = Mixture([0.5, 0.5], [[0.0, 0.0], [-1.0, 0.5]], "gaussian", 0.7)
STAT = engine.OutputStatistic(engine.default_edges(P, Q, 64))
T, BT = 50_000, 4096


def _eq(a, b):
    return np.array_equal(a.counts_p, b.counts_p) and np.array_equal(a.counts_q, b.counts_q)


def test_counts_and_thread_chunk_invariance():
    ref = engine.run_histograms(P, Q, STAT, T, 7, threads=1, block_trials=BT)
    assert ref.counts_p.sum() == T and ref.counts_q.sum() == T
    assert ref.counts_p.dtype == np.int64 and ref.counts_p.shape == (STAT.edges.size + 1,)
    old = numba.get_num_threads()
    two = engine.run_histograms(P, Q, STAT, T, 7, threads=2, block_trials=BT)
    assert numba.get_num_threads() == old
    four = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, chunk_blocks=4)
    thr = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, n_jobs=2,
                                backend="threading", chunk_blocks=3)
    assert _eq(ref, two) and _eq(ref, four) and _eq(ref, thr)
    other = engine.run_histograms(P, Q, STAT, T, 8, block_trials=BT)
    assert not _eq(ref, other)


def test_loky_processes_identical():
    ref = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT)
    par = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, n_jobs=2, chunk_blocks=4)
    assert _eq(ref, par)


def test_prefix_property_and_sample_outputs():
    """Blocks are the unit: a longer run's counts contain the shorter run's draws, and
    sample_outputs reproduces side 0 exactly."""
    x = engine.sample_outputs(P, T, 7, block_trials=BT)
    h = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT)
    idx = np.searchsorted(STAT.edges, x, side="right")
    np.testing.assert_array_equal(np.bincount(idx, minlength=STAT.edges.size + 1), h.counts_p)
    y = engine.sample_outputs(Q, T, 7, side=1, block_trials=BT)
    idx = np.searchsorted(STAT.edges, y, side="right")
    np.testing.assert_array_equal(np.bincount(idx, minlength=STAT.edges.size + 1), h.counts_q)
    longer = engine.sample_outputs(P, T + 5000, 7, block_trials=BT)
    np.testing.assert_array_equal(longer[:T], x)


def test_linear_and_llr_statistics_match_numpy():
    edges = np.linspace(-4, 4, 41)
    w = np.array([0.3, -1.2])
    lin = engine.run_histograms(PV, QV, engine.LinearStatistic(w, 0.5, edges), T, 3,
                                block_trials=BT)
    llr = engine.run_histograms(PV, QV, engine.LLRStatistic(edges), T, 3, block_trials=BT)
    xp = engine.sample_outputs(PV, T, 3, block_trials=BT)
    xq = engine.sample_outputs(QV, T, 3, side=1, block_trials=BT)

    def hist(v):
        return np.bincount(np.searchsorted(edges, v, side="right"), minlength=edges.size + 1)

    np.testing.assert_array_equal(lin.counts_p, hist(xp @ w + 0.5))
    np.testing.assert_array_equal(lin.counts_q, hist(xq @ w + 0.5))
    # LLR rounding can differ from scipy's logsumexp in the last bits: allow bin-edge ties.
    for counts, x in ((llr.counts_p, xp), (llr.counts_q, xq)):
        ref = hist(PV.logpdf(x) - QV.logpdf(x))
        assert np.abs(counts - ref).sum() <= 4


def test_checkpoint_resume(tmp_path, monkeypatch):
    ref = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT)
    ck = tmp_path / "ck"
    first = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                  chunk_blocks=2)
    files = sorted(ck.glob("*.npz"))
    assert _eq(ref, first) and len(files) == 7
    files[3].unlink()  # an interrupted run: one chunk missing
    calls = []
    real = engine._chunk_job

    def counting(key, b0, b1, *a):
        calls.append((b0, b1))
        return real(key, b0, b1, *a)

    monkeypatch.setattr(engine, "_chunk_job", counting)
    again = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                  chunk_blocks=2, progress=True)
    assert _eq(ref, again) and calls == [(6, 8)]


def test_json_roundtrip():
    h = engine.run_histograms(PV, QV, engine.LinearStatistic([1.0, 1.0], 0.0, [-1, 0, 1]),
                              1000, 2)
    back = engine.HistogramCounts.from_dict(json.loads(json.dumps(h.to_dict())))
    assert _eq(h, back) and back.trials == 1000 and back.seed == 2
    assert isinstance(back.statistic, engine.LinearStatistic)


def test_default_edges_cover_shifts():
    e = engine.default_edges(P, Q, 100)
    assert e[0] <= -25 and e[-1] >= 28 and e.size == 101


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"trials": 0}, "trials must be an integer >= 1"),
        ({"trials": 1.5}, "trials must be an integer"),
        ({"statistic": engine.OutputStatistic([0.0, 1.0]), "P": PV, "Q": QV}, "scalar outputs"),
        ({"statistic": engine.LinearStatistic([1.0, 2.0, 3.0], 0.0, [0, 1]), "P": PV, "Q": QV},
         "weights must have length"),
        ({"Q": QV}, "same noise"),
        ({"n_jobs": 0}, "n_jobs must be"),
        ({"threads": 0}, "threads must be"),
        ({"backend": "mpi"}, "backend must be one of"),
        ({"block_trials": 0}, "block_trials must be"),
        ({"seed": -1}, "seed must be"),
        ({"statistic": "x"}, "statistic must be"),
        ({"chunk_blocks": 100}, "chunk_blocks must be in"),
    ],
)
def test_invalid_inputs_fail_before_work(kwargs, match, monkeypatch):
    def boom(*a, **k):  # pragma: no cover - must not run
        raise AssertionError("work started")

    monkeypatch.setattr(engine, "_chunk_job", boom)
    args = {"P": P, "Q": Q, "statistic": STAT, "trials": 100, "seed": 0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        engine.run_histograms(args.pop("P"), args.pop("Q"), args.pop("statistic"),
                              args.pop("trials"), args.pop("seed"), **args)


@pytest.mark.parametrize("bad", [[1.0], [0.0, 0.0], [0.0, np.inf], [[0.0, 1.0]]])
def test_bad_edges(bad):
    with pytest.raises(ValueError, match="edges"):
        engine.OutputStatistic(bad)


@pytest.mark.dask
@pytest.mark.parametrize("processes", [False, True])
def test_dask_backend_identical(processes):
    distributed = pytest.importorskip("distributed")
    ref = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT)
    # In-process workers talk over inproc:// (no host); process workers over loopback.
    net = {"host": "127.0.0.1"} if processes else {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                                  dashboard_address=None, **net) as cluster, \
            distributed.Client(cluster):
        got = engine.run_histograms(P, Q, STAT, T, 7, block_trials=BT, n_jobs=2,
                                    backend="dask", chunk_blocks=3)
    assert _eq(ref, got)


@pytest.mark.slow
def test_large_run_identical_across_threads():
    a = engine.run_histograms(P, Q, STAT, 20_000_000, 1, threads=1)
    b = engine.run_histograms(P, Q, STAT, 20_000_000, 1, threads=2, chunk_blocks=7)
    assert _eq(a, b)
