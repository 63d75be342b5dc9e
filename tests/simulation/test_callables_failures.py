"""How a black-box run fails: a mechanism that exits, returns None or a complex value, or
kills its worker; buffers too large for memory; bad or unwritable chunk files; the run's
label in every message; checkpoints keyed by the mechanism's code."""

from __future__ import annotations

import dataclasses
import errno
import importlib
import os
import sys
import warnings

import numpy as np
import pytest

from audit.model.implementation import CallableImplementation, Claim
from audit.model.missingness import make_missingness
from audit.simulation import checkpoints
from audit.simulation.callables import (
    MID_RUN_ERRORS,
    CallableRun,
    CheckpointWarning,
    CheckpointWriteError,
    ChunkMemoryError,
    ImplementationError,
    WorkerDiedError,
    count_chunk_files,
    iter_chunks,
    probe,
)
from audit.simulation.checkpoints import code_digest, run_prefixes

Z = np.zeros((5, 2))
ZP = Z.copy()
ZP[0] = 1.0
MECH = make_missingness("mcar-iid", rate=0.4)


def _run(impl, trials=120, chunk=40, key=7, dim=0, label="run"):
    return CallableRun(impl, Z, ZP, MECH, chunk, trials, key, dim, label=label)


def _all(run, **kw):
    chunks = list(iter_chunks(run, **kw))
    return np.concatenate([c[1] for c in chunks]), np.concatenate([c[2] for c in chunks])


def _random(data, rng):
    return rng.random()


# ---------------------------------------------------------------- mechanisms that exit
class _Quit(BaseException):
    pass


def _exits(data, rng):
    if rng.random() < 0.1:
        sys.exit(0)
    return 1.0


def _raises_base(data, rng):
    raise _Quit("gone")


def _interrupts(data, rng):
    raise KeyboardInterrupt


def _kills_its_process(data, rng):
    if rng.random() < 0.2:
        os._exit(3)
    return 1.0


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_sys_exit_in_a_mechanism_is_an_implementation_error(n_jobs):
    with pytest.raises(ImplementationError,
                       match=r"raised SystemExit: 0 on call \d+ \(dataset z'?, chunk \d+ of the "
                             r"main run\) \(it called sys.exit\(0\)"):
        _all(_run(_exits), n_jobs=n_jobs, label="main run")


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_any_base_exception_of_a_mechanism_is_an_implementation_error(n_jobs):
    with pytest.raises(ImplementationError, match=r"raised _Quit: gone on call 0 .*pilot"):
        _all(_run(_raises_base), n_jobs=n_jobs, label="pilot")
    with pytest.raises(ImplementationError, match="raised _Quit: gone on its first call"):
        probe(_raises_base, Z, MECH, 0)
    with pytest.raises(ImplementationError, match="raised SystemExit"):
        probe(lambda data, rng: sys.exit(2), Z, MECH, 0)


def test_a_keyboard_interrupt_in_this_process_stays_the_users():
    with pytest.raises(KeyboardInterrupt):
        _all(_run(_interrupts))
    with pytest.raises(KeyboardInterrupt):
        probe(_interrupts, Z, MECH, 0)


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_a_keyboard_interrupt_raised_in_a_worker_is_the_mechanisms(backend):
    with pytest.raises(ImplementationError, match="raised KeyboardInterrupt on call 0"):
        _all(_run(_interrupts), n_jobs=2, backend=backend)


def test_a_mechanism_killing_its_worker_is_one_clear_error(tmp_path):
    with pytest.raises(WorkerDiedError) as info:
        _all(_run(_kills_its_process, trials=400), n_jobs=2, label="pilot",
             checkpoint=tmp_path)
    msg = str(info.value)
    assert msg.startswith("a worker process died during the pilot while chunk ")
    assert "was pending" in msg and "EXIT(3)" in msg and "\n" not in msg
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert isinstance(info.value, RuntimeError) and WorkerDiedError in MID_RUN_ERRORS


# ------------------------------------------------------------- not a release: None, complex
@pytest.mark.parametrize(("value", "needle"), [
    (None, "returned None"),
    (1 + 2j, "returned a complex value"),
    (np.complex128(1.0), "returned a complex value"),
    (np.array([1.0, 2j]), "returned a complex value"),
    ([1.0, None], "returned None among its outputs"),
    ("1.5", "non-numeric value"),
])
def test_probe_refuses_none_and_complex(value, needle):
    with pytest.raises(ImplementationError, match=needle) as info:
        probe(lambda data, rng: value, Z, MECH, 0)
    assert "first call" in str(info.value)


def _forgets_return_late(data, rng):
    if rng.random() < 0.05:
        return None
    return 1.0


def _complex_late(data, rng):
    return 1.0 + (1j if rng.random() < 0.05 else 0)


@pytest.mark.parametrize(("func", "needle"), [(_forgets_return_late, "returned None on call"),
                                              (_complex_late, "returned a complex value on")])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_none_and_complex_mid_run_are_failures_not_nan(func, needle, n_jobs):
    assert probe(func, Z, MECH, 0) == 0 or True  # the first call may well be fine
    with pytest.raises(ImplementationError, match=needle):
        _all(_run(func, trials=400), n_jobs=n_jobs)


class _Batched:
    name = "batched"

    def __init__(self, result):
        self.result = result

    def __call__(self, data, rng):
        return 0.0

    def batch(self, datasets, rng):
        return self.result(len(datasets))


@pytest.mark.parametrize(("result", "needle"), [
    (lambda m: None, "returned None"),
    (lambda m: [None] * m, "returned None among its outputs"),
    (lambda m: np.ones(m, dtype=np.complex128), "returned a complex value"),
    (lambda m: [1.0] * (m - 1) + [1j], "returned a complex value"),
])
def test_the_batched_form_refuses_none_and_complex(result, needle):
    with pytest.raises(ImplementationError, match=needle + r" \(dataset z, chunk 0 of the run"):
        _all(_run(_Batched(result)))


def test_real_values_still_pass_in_every_form():
    p, _ = _all(_run(_Batched(lambda m: np.arange(m, dtype=np.float32))))
    np.testing.assert_array_equal(p, np.concatenate([np.arange(40.0)] * 3))
    p, _ = _all(_run(lambda data, rng: np.int64(3)))
    assert (p == 3.0).all()


# ------------------------------------------------------------------------------- memory
def test_our_own_output_buffer_failing_is_not_the_mechanisms_memory_error():
    calls = []

    def vector(data, rng):
        calls.append(1)
        return np.zeros(10**7)

    run = CallableRun(vector, Z, ZP, MECH, 10**6, 10**6, 0, 10**7, label="main run")
    with pytest.raises(ChunkMemoryError,
                       match=r"^the outputs of one chunk \(1000000 calls × 10000000 values\) "
                             r"do not fit in memory \(dataset z, chunk 0 of the main run\); "
                             r"lower implementation.chunk$"):
        _all(run)
    assert calls == []  # the framework's buffer failed before any call


def test_our_own_mask_buffer_failing_is_not_the_mechanisms_memory_error():
    batched = _Batched(lambda m: np.zeros(m))
    run = CallableRun(batched, Z, ZP, MECH, 10**12, 10**12, 0, 0)
    with pytest.raises(ChunkMemoryError, match=r"the masked datasets of one chunk "
                                               r"\(1000000000000 calls × 5 × 2 values\)"):
        _all(run)


def test_a_memory_error_of_the_mechanism_is_still_its_own():
    def greedy(data, rng):
        raise MemoryError("the mechanism's own")

    with pytest.raises(ImplementationError, match="raised MemoryError: the mechanism's own"):
        _all(_run(greedy))


# ------------------------------------------------------------------------- chunk files
def test_bad_chunk_files_are_recomputed_with_one_warning_each(tmp_path):
    run = _run(_random)
    ref = _all(run)
    _all(run, checkpoint=tmp_path)
    files = sorted(tmp_path.glob("*.npz"))
    assert len(files) == 3
    files[0].write_bytes(files[0].read_bytes()[:50])  # a torn zip (BadZipFile)
    np.savez(files[1], p=np.ones(7), q=np.ones(7))  # not the chunk's 40 outputs
    with open(files[2], "wb") as f:
        np.savez(f, p=np.ones(40), other=np.ones(40))  # foreign arrays
    with pytest.warns(CheckpointWarning) as w:
        again = _all(run, checkpoint=tmp_path)
    msgs = sorted(str(x.message) for x in w)
    assert len(msgs) == 3
    assert all(m.endswith("its chunk is recomputed") for m in msgs)
    assert any(str(files[0]) in m and "cannot be read (BadZipFile" in m for m in msgs)
    assert any(str(files[1]) in m and "shape (7,), expected float64 of shape (40,)" in m
               for m in msgs)
    assert any(str(files[2]) in m and "holds the arrays ['other', 'p']" in m for m in msgs)
    np.testing.assert_array_equal(again[0], ref[0])
    np.testing.assert_array_equal(again[1], ref[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten: a third run reads every file silently
        third = _all(run, checkpoint=tmp_path)
    np.testing.assert_array_equal(third[0], ref[0])


def test_a_vector_chunk_of_the_wrong_dimension_is_recomputed(tmp_path):
    run = _run(lambda data, rng: rng.random(3), dim=3)
    ref = _all(run, checkpoint=tmp_path)
    path = sorted(tmp_path.glob("*.npz"))[1]
    np.savez(path, p=np.ones((40, 2)), q=np.ones((40, 2)))
    with pytest.warns(CheckpointWarning, match=r"shape \(40, 2\), expected float64 of shape "
                                               r"\(40, 3\)"):
        again = _all(run, checkpoint=tmp_path)
    np.testing.assert_array_equal(again[0], ref[0])


def test_a_full_disk_stops_the_run_saying_what_was_kept(tmp_path, monkeypatch):
    real = checkpoints.save_arrays
    saves = []

    def fills_up(path, **arrays):
        if len(saves) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        saves.append(path)
        real(path, **arrays)

    monkeypatch.setattr(checkpoints, "save_arrays", fills_up)
    with pytest.raises(CheckpointWriteError,
                       match=rf"^checkpoint folder {tmp_path}: no space left on device after "
                             r"2 finished chunks were saved") as info:
        _all(_run(_random, trials=200), checkpoint=tmp_path)
    assert info.value.saved == 2 and info.value.errno == errno.ENOSPC
    assert isinstance(info.value, OSError) and CheckpointWriteError in MID_RUN_ERRORS
    assert count_chunk_files(tmp_path, _run(_random, trials=200).digest()) == 2
    # the resume reads chunks 0 and 1 back without rewriting them, then saves 2 and 3
    saves.clear()
    with pytest.raises(CheckpointWriteError, match="after 4 finished chunks were saved"):
        _all(_run(_random, trials=200), checkpoint=tmp_path)
    assert [p.name[-8:] for p in saves] == ["0002.npz", "0003.npz"]


def test_count_chunk_files_counts_only_the_runs_asked_for(tmp_path):
    a, b = _run(_random), _run(_random, key=8)
    _all(a, checkpoint=tmp_path)
    _all(b, checkpoint=tmp_path / "other")
    _all(_run(_random, trials=80, key=9), checkpoint=tmp_path)
    (tmp_path / f"{a.digest()}_c000000000009.npz.abc.tmp").write_bytes(b"")  # a write
    assert count_chunk_files(tmp_path, a.digest()) == 3
    assert count_chunk_files(tmp_path, [a.digest(), _run(_random, trials=80, key=9).digest()]
                             ) == 5
    assert count_chunk_files(tmp_path, ()) == 0
    assert count_chunk_files(tmp_path / "missing", a.digest()) == 0
    prefixes = run_prefixes(tmp_path)
    assert a.digest() in prefixes and b.digest() not in prefixes
    assert count_chunk_files(tmp_path, prefixes) == 5
    with pytest.raises(ValueError, match="prefix must be"):
        count_chunk_files(tmp_path, "")
    with pytest.raises(ValueError, match="directory must be a path"):
        run_prefixes(3)


# --------------------------------------------------------------------------- code digest
_V1 = "def mech(data, rng):\n    return 1.0 + rng.random()  # the bug: an offset\n"
_V2 = "def mech(data, rng):\n    return rng.random()\n"


def test_fixing_a_mechanism_invalidates_its_checkpoints(tmp_path, monkeypatch):
    (tmp_path / "user_mech_digest.py").write_text(_V1)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("user_mech_digest")
    buggy = _all(_run(CallableImplementation(module.mech, Claim(1.0), "m")),
                 checkpoint=tmp_path / "ck")
    (tmp_path / "user_mech_digest.py").write_text(_V2)
    module = importlib.reload(module)
    run = _run(CallableImplementation(module.mech, Claim(1.0), "m"))
    assert run.code_digest_strength == "source"
    fixed = _all(run, checkpoint=tmp_path / "ck")
    assert (buggy[0] >= 1).all() and (fixed[0] < 1).all()
    assert count_chunk_files(tmp_path / "ck", run.digest()) == 3
    assert len(list((tmp_path / "ck").glob("*.npz"))) == 6


def _plain(data, rng):
    return 0.0


def _other(data, rng):
    return 1.0


def test_code_digest_strengths():
    import threading

    lock = threading.Lock()
    scale = 2.0

    def over_data(data, rng):
        return scale * rng.random()

    def over_lock(data, rng):
        with lock:
            return 0.0

    assert code_digest(_plain)[1] == "source"
    assert code_digest(over_data)[1] == "source"  # plain data closed over is digested
    assert code_digest(over_lock)[1] == "module"
    assert code_digest(lambda data, rng: 0.0)[1] == "module"
    assert code_digest(_Batched(None))[1] == "module"  # a callable object
    assert code_digest(len)[1] == "none"
    wrapped = CallableImplementation(_plain, Claim(1.0), "p")
    assert code_digest(wrapped) == code_digest(CallableImplementation(_plain, Claim(2.0)))
    assert code_digest(wrapped)[0] != code_digest(CallableImplementation(_other, Claim(1.0)))[0]
    assert code_digest(_plain)[0] == code_digest(_plain)[0] != code_digest(_other)[0]
    assert _run(_plain).digest() != _run(_other).digest()
    assert _run(lambda d, r: 0.0).code_digest_strength == "module"


@dataclasses.dataclass(frozen=True)
class _Described:
    """A callable object described by its fields."""

    where: str

    def __call__(self, data, rng):
        return 0.0


def test_a_described_objects_state_is_digested_unless_its_repr_holds_an_address():
    # a "0x" in a field (a temporary directory's random name) is not an address: the state
    # counts, so an edited field is a new digest (it once made the isolated client's digest
    # test fail about once in 100 runs)
    assert code_digest(_Described("/tmp/a0xk1")) != code_digest(_Described("/tmp/a0xk2"))
    assert code_digest(_Described("x")) != code_digest(_Described("y"))
    # an address differs between runs: such a repr is left out, so equal code digests alike
    at = [_Described(repr(object())) for _ in range(2)]
    assert "0x" in at[0].where and code_digest(at[0]) == code_digest(at[1])


def test_adapter_built_callables_are_digested_through_the_wrapped_function():
    from audit.adapters import make_implementation

    target = "tests.adapters.example_mechanisms:noisy_sum"
    params = {"bound": 1.0, "scale": 2.0}
    a = make_implementation(target, epsilon=1.0, params=params)
    b = make_implementation(target, epsilon=1.0, params=params)
    assert code_digest(a) == code_digest(b)
    assert code_digest(a)[1] == "source"
    explode = make_implementation("tests.adapters.example_mechanisms:explode", epsilon=1.0)
    # the same wrapper closure, another user function inside: another digest
    assert code_digest(explode)[0] != code_digest(a)[0]


def test_the_pipeline_names_the_pilot_and_the_main_run():
    from audit.pipeline.implementation import ImplementationSubject
    from tests.conftest import audit_config

    state = {"n": 0}

    def fails_after_the_probe(data, rng):
        state["n"] += 1
        if state["n"] > 1:
            raise RuntimeError("broken")
        return 0.0

    cfg = audit_config(**{"audit.trials": 4000, "scenario.d": 3, "scenario.n": 5})
    impl = CallableImplementation(fails_after_the_probe, Claim(1.0), "late-failure")
    subject = ImplementationSubject.from_config(cfg, impl, chunk=50)
    with pytest.raises(ImplementationError, match=r"chunk 0 of the pilot\)$"):
        subject.draw(100, 1)
    from audit.statistics import Statistic

    with pytest.raises(ImplementationError, match=r"chunk 0 of the main run\)$"):
        subject.count(Statistic.output(np.linspace(-1, 1, 5)), 100, 2)
