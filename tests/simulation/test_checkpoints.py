import numpy as np
import pytest

from audit.mixture import Mixture
from audit.simulation import checkpoints, engine, execution
from audit.statistics import Statistic

P = Mixture([0.2, 0.5, 0.3], [0.0, 1.0, 3.0], "laplace", 1.0)
Q = Mixture([1.0], [0.0], "laplace", 1.0)
STAT = Statistic.output(engine.default_edges(P, Q, 64))
T, BT = 50_000, 4096  # 13 blocks per side


def _eq(a, b):
    return np.array_equal(a.counts_p, b.counts_p) and np.array_equal(a.counts_q, b.counts_q)


def _count_jobs(monkeypatch):
    """Record the block range of every job the engine runs (in this process or its threads)."""
    calls = []
    real = execution.run_job

    def counting(plan, job, *args):
        calls.append((plan[job[0]][0], plan[job[-1]][1]))
        return real(plan, job, *args)

    monkeypatch.setattr(execution, "run_job", counting)
    return calls


def _files(ck):
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in ck.glob("*.npz")}


@pytest.fixture(scope="module")
def ref():
    return engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT)


def test_resume_recomputes_only_missing_chunks(tmp_path, monkeypatch, ref):
    ck = tmp_path / "ck"
    first = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                  chunk_blocks=2)
    files = sorted(ck.glob("*.npz"))
    assert _eq(ref, first) and len(files) == 7
    assert not list(ck.glob("*.tmp"))  # atomic writes leave no temporary files
    files[3].unlink()  # an interrupted run: one chunk missing
    files[5].unlink()
    calls = _count_jobs(monkeypatch)
    again = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                  chunk_blocks=2, progress=True)
    assert _eq(ref, again) and calls == [(6, 8), (10, 12)]
    calls.clear()
    engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck, chunk_blocks=2)
    assert calls == []


def test_resume_after_an_interrupted_run(tmp_path, monkeypatch, ref):
    """Interrupt a threaded run after five chunk files; the rerun computes exactly the
    chunks that have no file, and the total is the uninterrupted run's."""
    ck = tmp_path / "ck"
    real = checkpoints.ChunkStore.save
    saves = []

    class Interrupt(Exception):
        pass

    def dies_after_five(self, *args):
        real(self, *args)
        saves.append(args[:2])
        if len(saves) == 5:
            raise Interrupt

    monkeypatch.setattr(checkpoints.ChunkStore, "save", dies_after_five)
    with pytest.raises(Interrupt):
        engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                              n_jobs=2, backend="threading")
    monkeypatch.setattr(checkpoints.ChunkStore, "save", real)
    saved = {tuple(int(s) for s in p.stem.split("_")[1:]) for p in ck.glob("*.npz")}
    assert saved == set(saves) and len(saved) == 5
    calls = _count_jobs(monkeypatch)
    again = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                  n_jobs=2, backend="threading")
    assert _eq(ref, again)
    assert sorted(calls) == sorted({(b, b + 1) for b in range(13)} - saved)


@pytest.mark.parametrize(("first_jobs", "second_jobs", "backend"),
                         [(1, 2, "loky"), (2, 1, "threading"), (2, -1, "threading")])
def test_resume_with_other_workers_reuses_chunks(tmp_path, monkeypatch, ref, first_jobs,
                                                 second_jobs, backend):
    ck = tmp_path / "ck"
    first = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                  n_jobs=first_jobs, backend=backend)
    before = _files(ck)
    assert _eq(ref, first) and len(before) == 13
    lost = sorted(before)[4]
    (ck / lost).unlink()
    calls = _count_jobs(monkeypatch)
    again = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                  n_jobs=second_jobs, backend=backend)
    after = _files(ck)
    assert _eq(ref, again)
    assert after.keys() == before.keys()
    assert {k for k in after if after[k] != before[k]} == {lost}
    if backend == "threading":  # jobs run in this process's threads: they can be counted
        assert calls == [(4, 5)]


def test_code_tag_names_the_files(tmp_path):
    key = 123
    a = checkpoints.run_hash(P, Q, STAT, T, key, BT)
    assert a == checkpoints.run_hash(P, Q, STAT, T, key, BT, tag=checkpoints.CODE_TAG)
    b = checkpoints.run_hash(P, Q, STAT, T, key, BT, tag="other kernels")
    assert a != b
    sa = checkpoints.ChunkStore(tmp_path, a, STAT.n_bins)
    sb = checkpoints.ChunkStore(tmp_path, b, STAT.n_bins)
    assert sa.path(0, 64).name != sb.path(0, 64).name
    assert checkpoints.CODE_TAG == checkpoints.code_tag()
    assert checkpoints.code_tag(("rng.py",)) != checkpoints.CODE_TAG


def test_run_hash_covers_the_inputs():
    base = checkpoints.run_hash(P, Q, STAT, T, 1, BT)
    assert checkpoints.run_hash(P, Q, STAT, T + 1, 1, BT) != base
    assert checkpoints.run_hash(P, Q, STAT, T, 2, BT) != base
    assert checkpoints.run_hash(P, Q, STAT, T, 1, BT + 1) != base
    assert checkpoints.run_hash(Q, P, STAT, T, 1, BT) != base
    other = Statistic.output(engine.default_edges(P, Q, 65))
    assert checkpoints.run_hash(P, Q, other, T, 1, BT) != base


def test_torn_and_foreign_files_are_recomputed(tmp_path, ref):
    ck = tmp_path / "ck"
    engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck, chunk_blocks=4)
    files = sorted(ck.glob("*.npz"))
    files[0].write_bytes(b"not an npz file")
    np.savez(files[1], counts_p=np.ones(3), counts_q=np.ones(3))  # wrong shape
    np.savez(files[2], other=np.ones(3))  # wrong arrays
    again = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                  chunk_blocks=4)
    assert _eq(ref, again)


def test_failed_save_leaves_no_file(tmp_path, monkeypatch):
    store = checkpoints.ChunkStore(tmp_path / "ck", "h", 3)

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        store.save(0, 1, np.zeros(3, np.int64), np.zeros(3, np.int64))
    assert list((tmp_path / "ck").iterdir()) == []
    assert store.load(0, 1) is None


def test_store_roundtrip(tmp_path):
    store = checkpoints.ChunkStore(tmp_path / "a" / "b", "h", 4)  # parents created
    cp, cq = np.arange(4, dtype=np.int64), np.arange(4, 8, dtype=np.int64)
    store.save(64, 128, cp, cq)
    got = store.load(64, 128)
    assert store.path(64, 128).name == "h_000000000064_000000000128.npz"
    np.testing.assert_array_equal(got[0], cp)
    np.testing.assert_array_equal(got[1], cq)
    assert store.load(0, 64) is None


@pytest.mark.parametrize("bad", [3, b"dir"])
def test_check_directory_refuses_non_paths(bad):
    with pytest.raises(ValueError, match="checkpoint must be"):
        checkpoints.check_directory(bad)


def test_structured_laws_checkpoint_and_resume(tmp_path):
    # Product and subset laws (not mixtures) hash their own parameters into the file names
    from audit.laws import ProductMixture, SubsetMixture
    from audit.simulation import engine
    from audit.statistics import Statistic

    A = SubsetMixture([1.0, -1.0, 0.5], 2, 0.6, "laplace", 1.0)
    B = SubsetMixture([-1.0, 1.0, 0.5], 2, 0.6, "laplace", 1.0)
    C = ProductMixture([[0.7, 0.3]] * 3, [[1.0, 0.0]] * 3, "laplace", 1.0)
    for P, Q in ((A, B), (C, A)):
        stat = Statistic.llr(P, Q, np.linspace(-3, 3, 31))
        first = engine.run_histograms(P, Q, stat, 5000, 2, block_trials=1000,
                                      checkpoint=tmp_path / type(P).__name__)
        again = engine.run_histograms(P, Q, stat, 5000, 2, block_trials=1000,
                                      checkpoint=tmp_path / type(P).__name__)
        np.testing.assert_array_equal(first.counts_p, again.counts_p)
        assert len(list((tmp_path / type(P).__name__).glob("*.npz"))) > 0
