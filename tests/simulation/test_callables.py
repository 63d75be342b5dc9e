"""Black-box implementations drawn in chunks: reproducible for any workers, checkpointed,
failures reported with the call that failed."""

from __future__ import annotations

import numpy as np
import pytest

from audit.model.missingness import make_missingness
from audit.simulation.callables import (
    CallableRun,
    ImplementationError,
    chunk_generator,
    iter_chunks,
    probe,
)

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
