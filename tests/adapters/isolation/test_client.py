"""The auditor's side of an isolated target: a worker's lifecycle (a crash, a hang, a
library's exception, Ctrl-C, SIGTERM, SIGKILL: no orphan), the implementation over it, and
what ``python -m audit run`` makes of each failure (exit 3 mid-run, 2 before any work). The
worker runs on this interpreter (``fake_isolated.py``): nothing is built here; the tests that
build environments are in ``test_environments.py`` (marked ``isolated``)."""

from __future__ import annotations

import dataclasses
import pickle
import re
import signal
import subprocess
import sys
import textwrap
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import psutil
import pytest

from audit.adapters import ENTRY_POINT_GROUP
from audit.adapters.isolation.client import IsolatedImplementation, WorkerError, WorkerTimeout
from audit.cli import main
from tests.adapters.isolation.fake_isolated import host_worker, make
from tests.conftest import audit_doc, to_toml

ROOT = Path(__file__).resolve().parents[3]


def gone(pid: int, within: float = 5.0) -> bool:
    """Whether process ``pid`` has ended (a zombie counts as ended) within ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_worker_that_crashes_is_an_error_naming_its_exit_status():
    worker, _ = host_worker({"crash_on": 2})
    worker.call(np.ones((1, 2, 1)), 0)
    with pytest.raises(WorkerError, match=r"died \(exit status 7\) while releasing"):
        worker.call(np.ones((1, 2, 1)), 0)
    assert gone(worker.pid) and not worker.alive


def test_a_killed_workers_temporary_files_are_removed_with_it():
    worker, info = host_worker({})
    # the worker's TMPDIR is a folder of this side's, which it removes, killed worker or not
    assert Path(info["tmp"]).parent == Path(worker.scratch) and Path(info["tmp"]).is_file()
    subprocess.run(["kill", "-9", str(worker.pid)], check=True)
    with pytest.raises(WorkerError, match="died"):
        worker.call(np.ones((1, 2, 1)), 0)
    assert gone(worker.pid) and not Path(worker.scratch).exists()


def test_a_worker_that_hangs_is_killed_at_the_timeout():
    worker, _ = host_worker({"hang_on": 1}, call_timeout=0.5)
    start = time.monotonic()
    with pytest.raises(WorkerTimeout, match="did not answer within the timeout"):
        worker.call(np.ones((1, 2, 1)), 0)
    assert time.monotonic() - start < 5 and gone(worker.pid)


def test_a_library_exception_is_one_line_and_the_worker_stays():
    worker, _ = host_worker({"raise_on": 1, "scale": 0.0})
    try:
        with pytest.raises(RuntimeError, match="^fake-isolated:sum: ArithmeticError: the "
                                               "library failed on this call$"):
            worker.call(np.ones((1, 2, 1)), 0)
        np.testing.assert_array_equal(worker.call(np.ones((1, 2, 1)), 0), [2.0])
    finally:
        worker.close()
    assert gone(worker.pid)


def test_parameters_the_library_refuses_are_an_error_before_any_call():
    with pytest.raises(RuntimeError, match="ValueError: parameter 'refuse' is set"):
        host_worker({"refuse": True})


def test_the_implementation_is_seeded_batched_and_sendable():
    impl = make("sum", epsilon=1.0, delta=0.0, params={"scale": 1.0})
    x = np.random.default_rng(0).uniform(size=(3, 5, 2))
    a = impl.batch(x, np.random.default_rng(9))
    np.testing.assert_array_equal(a, impl.batch(x, np.random.default_rng(9)))
    seed = int(np.random.default_rng(9).integers(2**63))  # the one seed a batch draws
    want = x.sum(axis=(1, 2)) + np.random.default_rng(seed).laplace(scale=1.0, size=3)
    np.testing.assert_allclose(a, want, rtol=0, atol=1e-12)
    assert isinstance(impl(x[0], np.random.default_rng(9)), float)
    pid = impl._state["worker"].pid
    copy = pickle.loads(pickle.dumps(impl))  # what a worker process receives
    assert set(copy._state) == {"lock"} and copy.claim == impl.claim
    impl.close()
    assert gone(pid)


def test_the_checkpoint_digest_covers_the_library_side_module(tmp_path):
    from audit.simulation.checkpoints import code_digest

    impl = make("sum", epsilon=1.0, delta=0.0, params={"scale": 1.0})
    fresh = dataclasses.replace(impl)  # the same description, no worker
    assert code_digest(fresh) == code_digest(impl)  # the worker it holds does not count
    impl.close()
    side = tmp_path / "side.py"
    side.write_text(Path(impl.module).read_text())
    same = dataclasses.replace(impl, module=str(side))
    side.write_text(side.read_text() + "\n# edited\n")
    edited = dataclasses.replace(impl, module=str(side))
    assert code_digest(edited)[0] != code_digest(same)[0]
    with pytest.raises(ValueError, match="cannot be read"):
        IsolatedImplementation(impl.environment, str(tmp_path / "gone.py"), {}, impl.claim,
                               impl.name)


_INTERRUPTED = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {root!r})
    from tests.adapters.isolation.fake_isolated import host_worker
    worker, _ = host_worker({{"hang_on": 1}})
    print(worker.pid, flush=True)
    try:
        worker.call(np.ones((1, 2, 1)), 0)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["ctrl-c", "sigterm", "sigkill"])
def test_no_orphan_when_the_auditor_is_interrupted_or_killed(sig):
    # the child gets the default SIGINT handling whatever this process inherited (a
    # background job of a non-interactive shell runs with SIGINT ignored, and a Python
    # started so never raises KeyboardInterrupt)
    parent = subprocess.Popen([sys.executable, "-c", _INTERRUPTED.format(root=str(ROOT))],
                              stdout=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        pid = int(parent.stdout.readline())
        time.sleep(0.3)  # the worker is in its hour-long call
        assert not gone(pid, 0.1)
        parent.send_signal(sig)
        parent.wait(timeout=15)
        if sig == signal.SIGINT:
            assert parent.returncode == 130 and "interrupted" in parent.stdout.read()
        assert gone(pid, 5.0), f"worker {pid} outlived its parent ({sig.name})"
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()


@pytest.fixture
def registered(monkeypatch):
    """The fake isolated adapter registered under the entry-point group."""
    real = metadata.entry_points

    def entry_points(**kw):
        if kw.get("group") == ENTRY_POINT_GROUP:
            return metadata.EntryPoints([metadata.EntryPoint(
                "fake-isolated", "tests.adapters.isolation.fake_isolated:ADAPTER",
                ENTRY_POINT_GROUP)])
        return real(**kw)

    monkeypatch.setattr(metadata, "entry_points", entry_points)


def _config(tmp_path: Path, function: str, params: dict) -> Path:
    doc = audit_doc({"implementation": {"target": f"fake-isolated:{function}",
                                        "epsilon": 1.0, "chunk": 50, "params": params},
                     "scenario": {"query": "sum", "d": 1, "n": 10, "bound": 1.0},
                     "missingness": {"kind": "mcar-iid", "rate": 0.2},
                     "audit": {"trials": 400, "seed": 1, "jobs": 1}})
    path = tmp_path / "cfg.toml"
    path.write_text(to_toml(doc))
    return path


@pytest.mark.parametrize(("params", "status", "needle"), [
    ({"scale": 5.0, "crash_on": 4}, 3, r"died \(exit status 7\)"),
    ({"scale": 5.0, "hang_on": 4, "timeout": 1.0}, 3, "did not answer within the timeout"),
    # the first batch (the rate measured before the run, on one chunk of 50 datasets)
    # already has the wrong shape
    ({"scale": 5.0, "bad_shape": True}, 2, r"returned shape \(51,\)"),
], ids=["crash", "hang", "wrong-shape"])
def test_a_worker_failing_is_one_error_line_and_exit_3_mid_run(registered, tmp_path, capsys,
                                                                params, status, needle):
    code = main(["run", str(_config(tmp_path, "sum", params)), "--no-progress"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == status and len(lines) == 1 and "Traceback" not in err, err
    assert "fake-isolated:sum" in lines[0] and re.search(needle, lines[0]), lines[0]


def test_a_missing_python_is_exit_2_naming_it(registered, tmp_path, capsys):
    code = main(["run", str(_config(tmp_path, "missing-python", {})), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "python 3.99 is not on this machine" in err


def test_an_isolated_audit_that_holds_exits_0(registered, tmp_path, capsys):
    # the fake release is a sum with Laplace noise of scale 2/ε: its claim holds
    code = main(["run", str(_config(tmp_path, "sum", {"scale": 2.0})), "--no-progress"])
    assert code == 0, capsys.readouterr().err


_RUN = textwrap.dedent("""
    import sys
    from importlib import metadata
    sys.path.insert(0, {root!r})
    real = metadata.entry_points

    def entry_points(**kw):
        if kw.get("group") == "audit.adapters":
            return metadata.EntryPoints([metadata.EntryPoint(
                "fake-isolated", "tests.adapters.isolation.fake_isolated:ADAPTER",
                "audit.adapters")])
        return real(**kw)

    metadata.entry_points = entry_points
    from audit.cli import main
    sys.exit(main(["run", {config!r}, "--no-progress"]))
""")


def _cmdline(process) -> list[str]:
    """A child's command line; none for one that has exited meanwhile (a zombie not yet
    reaped by its parent, or gone: the run starts and ends short-lived children too)."""
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_python_m_audit_run_interrupted_leaves_no_worker(tmp_path, sig):
    """``python -m audit run`` of an isolated target stopped mid-run (the implementation's
    call in this process): Ctrl-C is exit 130, SIGTERM 143, each with one ``interrupted:`` line
    (SIGTERM is not the implementation's own ``sys.exit``); the worker goes with it."""
    config = _config(tmp_path, "sum", {"scale": 5.0, "hang_on": 4})
    code = _RUN.format(root=str(ROOT), config=str(config))
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        workers: list = []
        while not workers and time.monotonic() < deadline:
            workers = [p for p in psutil.Process(run.pid).children()
                       if "worker.py" in " ".join(_cmdline(p))]
            time.sleep(0.1)
        assert workers, "no worker started"
        time.sleep(2.0)  # past the timing batches: the worker hangs on its 4th call
        run.send_signal(sig)
        out, err = run.communicate(timeout=30)
        assert run.returncode == 128 + sig, err
        assert err.startswith("interrupted:") and err.count("\n") == 1, err
        assert gone(workers[0].pid, 5.0)
    finally:
        run.kill()
        run.communicate()


def test_loading_a_config_checks_an_isolated_targets_parameters_without_building(monkeypatch):
    """``config_from_dict`` builds the implementation to run its checks; for an isolated
    target that is its parameters only (``parameters_only``): no environment, no worker."""
    import tomllib
    from pathlib import Path

    from audit.adapters.isolation import environments
    from audit.pipeline.config import config_from_dict

    def no_build(environment):
        raise AssertionError("loading a config must not build an environment")

    monkeypatch.setattr(environments, "ensure", no_build)
    path = Path(__file__).resolve().parents[3] / "experiments" / "configs" / "tumult_sum.toml"
    doc = tomllib.loads(path.read_text())
    assert config_from_dict(doc).implementation.target == "tumult:sum"
    doc["implementation"]["params"]["nan"] = "zz"
    with pytest.raises(ValueError, match=r"\[implementation\] tumult:sum: parameter 'nan'"):
        config_from_dict(doc)
