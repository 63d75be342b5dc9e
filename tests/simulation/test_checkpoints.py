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
    with pytest.warns(checkpoints.CheckpointWarning) as w:
        again = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                      chunk_blocks=4)
    assert _eq(ref, again)
    assert len(w) == 3
    for path, why in zip(files, ("cannot be read", "shape (3,)", "holds the arrays"),
                         strict=False):
        assert sum(str(path) in str(x.message) and why in str(x.message) for x in w) == 1


def _tampered(tmp_path, change):
    """A run's files, one chunk's counts changed by ``change(cp, cq)``; the rerun."""
    ck = tmp_path / "ck"
    engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck, chunk_blocks=4)
    path = sorted(ck.glob("*.npz"))[1]
    with np.load(path) as f:
        cp, cq = f["counts_p"].copy(), f["counts_q"].copy()
    change(cp, cq)
    np.savez(path, counts_p=cp, counts_q=cq)
    with pytest.warns(checkpoints.CheckpointWarning) as w:
        again = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                      chunk_blocks=4)
    assert len(w) == 1 and str(path) in str(w[0].message)
    return again, str(w[0].message)


def _one_more(cp, cq):
    cp[0] += 1


def _negative(cp, cq):
    cq[0] = -1


@pytest.mark.parametrize(("change", "why"), [
    (_one_more, "counts_p sums to 16385, expected the chunk's 16384 trials"),
    (_negative, "counts_q has negative counts"),
])
def test_counts_that_do_not_add_up_are_recomputed(tmp_path, ref, change, why):
    again, msg = _tampered(tmp_path, change)
    assert _eq(ref, again)
    assert why in msg


def test_float_counts_are_recomputed(tmp_path, ref):
    ck = tmp_path / "ck"
    engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck, chunk_blocks=4)
    path = sorted(ck.glob("*.npz"))[0]
    with np.load(path) as f:
        np.savez(path, counts_p=f["counts_p"] + 0.5, counts_q=f["counts_q"] * 1.0)
    with pytest.warns(checkpoints.CheckpointWarning, match="expected integer counts"):
        again = engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                                      chunk_blocks=4)
    assert _eq(ref, again)


def test_the_last_shorter_chunk_checks_its_own_trials(tmp_path):
    store = checkpoints.ChunkStore(tmp_path, "h", 3, trials=10, block_trials=4)
    assert [store.chunk_trials(0, 2), store.chunk_trials(2, 3)] == [8, 2]
    store.save(2, 3, np.array([1, 1, 0]), np.array([0, 0, 2]))
    assert store.load(2, 3) is not None and store.kept == 2
    store.save(0, 2, np.array([1, 1, 0]), np.array([0, 0, 2]))
    with pytest.warns(checkpoints.CheckpointWarning, match="sums to 2, expected the "
                                                           "chunk's 8 trials"):
        assert store.load(0, 2) is None


def test_a_full_disk_mid_run_raises_a_checkpoint_write_error(tmp_path, monkeypatch):
    import errno
    import os

    real = checkpoints.save_arrays
    saved = []

    def fills_up(path, **arrays):
        if len(saved) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        saved.append(path)
        real(path, **arrays)

    monkeypatch.setattr(checkpoints, "save_arrays", fills_up)
    ck = tmp_path / "ck"
    with pytest.raises(checkpoints.CheckpointWriteError,
                       match=rf"^checkpoint folder {ck}: no space left on device after 3 "
                             r"finished chunks were saved \(writing \w+_000000000006_") as e:
        engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck,
                              chunk_blocks=2)
    assert e.value.saved == 3 and e.value.directory == str(ck)
    assert len(list(ck.glob("*.npz"))) == 3 and not list(ck.glob("*.tmp"))
    import pickle

    back = pickle.loads(pickle.dumps(e.value))
    assert str(back) == str(e.value) and back.saved == 3


def test_count_chunk_files_and_run_prefixes_for_the_engine(tmp_path):
    ck = tmp_path / "ck"
    engine.run_histograms(P, Q, STAT, T, 9, block_trials=BT, checkpoint=ck, chunk_blocks=4)
    engine.run_histograms(P, Q, STAT, T, 10, block_trials=BT, checkpoint=ck, chunk_blocks=4)
    from audit.simulation.rng import derive_key

    h9 = checkpoints.run_hash(P, Q, STAT, T, derive_key(9), BT)
    assert checkpoints.count_chunk_files(ck, h9) == 4
    assert checkpoints.run_prefixes(ck)[0] == h9 and len(checkpoints.run_prefixes(ck)) == 2
    assert checkpoints.count_chunk_files(ck, checkpoints.run_prefixes(ck)) == 8


def test_the_examples_run():
    import doctest

    assert doctest.testmod(checkpoints).failed == 0


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
