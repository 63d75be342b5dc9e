"""The numba-free process plumbing: one worker cap and its notes, the joblib loop, SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from audit.enums import Backend
from audit.simulation import processes
from audit.simulation.processes import (
    ResourceCapWarning,
    WorkerCap,
    cap_jobs,
    cap_workers,
    check_jobs,
    joblib_backend,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setattr(processes, "usable_cpus", lambda: 2)


@pytest.mark.parametrize(("name", "spelled"), [("--jobs", "--jobs 1000"),
                                               ("audit.jobs", "audit.jobs = 1000"),
                                               ("n_jobs", "n_jobs=1000")])
def test_one_wording_whatever_the_source(two_cpus, name, spelled):
    cap = cap_workers(1000, name=name)
    assert cap == WorkerCap(1000, 2, (f"{spelled} capped at 2, the CPUs this process may use",),
                            over_cpus=True)
    assert cap.lines == (f"note: {spelled} capped at 2, the CPUs this process may use",)
    assert cap_jobs(1000, name) == (2, cap.lines[0])


def test_cli_and_config_notes_match_the_command_line_text(two_cpus):
    """The line ``audit run --jobs 1000`` prints today, and its config twin."""
    assert cap_jobs(1000, "--jobs")[1] == \
        "note: --jobs 1000 capped at 2, the CPUs this process may use"
    assert cap_jobs(1000, "audit.jobs")[1] == \
        "note: audit.jobs = 1000 capped at 2, the CPUs this process may use"


def test_nothing_capped_no_note(two_cpus):
    assert cap_jobs(1, "audit.jobs") == (1, None)
    assert cap_jobs(2, "--jobs") == (2, None)
    assert cap_workers(2, n_chunks=5) == WorkerCap(2, 2)


def test_minus_one_is_every_usable_cpu_without_a_note(two_cpus):
    assert cap_workers(-1) == WorkerCap(-1, 2)
    assert cap_jobs(-1, "--jobs") == (2, None)
    assert cap_workers(-1, backend="threading").workers == 2
    # with dask, -1 is every worker of the client: joblib asks the scheduler
    assert cap_workers(-1, backend=Backend.DASK) == WorkerCap(-1, -1)


def test_chunk_cap_after_the_cpu_cap(two_cpus):
    cap = cap_workers(1000, n_chunks=1)
    assert cap.workers == 1 and cap.over_cpus
    assert cap.notes == ("n_jobs=1000 capped at 2, the CPUs this process may use",
                         "2 workers capped at the run's 1 chunk")
    only_chunks = cap_workers(-1, n_chunks=1)
    assert only_chunks == WorkerCap(-1, 1, ("2 workers capped at the run's 1 chunk",))


def test_dask_is_not_capped_at_local_cpus_cuda_uses_one(two_cpus):
    assert cap_workers(16, backend="dask") == WorkerCap(16, 16)
    assert cap_workers(16, backend="dask", n_chunks=3).workers == 3
    cuda = cap_workers(4, name="audit.jobs", backend=Backend.CUDA)
    assert cuda.workers == 1 and not cuda.over_cpus
    assert cuda.notes == ("audit.jobs = 4 ignored: backend='cuda' runs on the GPU from the "
                          "calling process",)
    assert cap_workers(1, backend="cuda") == WorkerCap(1, 1)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "3", None])
@pytest.mark.parametrize(("name", "spelled"), [("--jobs", "--jobs "), ("audit.jobs",
                                                                       "audit.jobs = "),
                                               ("n_jobs", "n_jobs=")])
def test_bad_requests_are_refused_naming_the_setting(bad, name, spelled):
    msg = f"{name} must be an integer >= 1 or -1, got {spelled}{bad!r}"
    for call in (lambda: check_jobs(bad, name), lambda: cap_workers(bad, name=name),
                 lambda: cap_jobs(bad, name)):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == msg


@pytest.mark.parametrize(("kwargs", "needle"), [({"n_chunks": 0}, "n_chunks must be"),
                                                ({"n_chunks": 2.0}, "n_chunks must be"),
                                                ({"backend": "spark"}, "backend must be"),
                                                ({"name": ""}, "name must be")])
def test_bad_arguments_of_the_cap(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        cap_workers(2, **kwargs)


def test_numpy_integers_are_requests():
    import numpy as np

    assert check_jobs(np.int64(3), "n_jobs") == 3


def test_the_warning_points_at_the_caller_and_only_over_the_cpus(two_cpus):
    with pytest.warns(ResourceCapWarning, match=r"^--jobs 9 capped at 2,") as caught:
        cap_workers(9, name="--jobs").warn()
    assert len(caught) == 1 and caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cap_workers(-1, n_chunks=1).warn()  # a chunk cap is a note, not a warning
        cap_workers(5, backend="cuda").warn()


def test_cap_workers_neither_warns_nor_prints(two_cpus, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cap_workers(1000, name="audit.jobs", n_chunks=3)
        cap_jobs(1000, "audit.jobs")
    assert capsys.readouterr() == ("", "")


def test_joblib_backends():
    assert [joblib_backend(b) for b in ("loky", "threading", Backend.DASK)] == [
        Backend.LOKY, Backend.THREADING, Backend.DASK]
    with pytest.raises(ValueError, match="got backend='cuda'"):
        joblib_backend("cuda")
    with pytest.raises(ValueError, match="backend must be one of"):
        joblib_backend("spark")


def _square(x):
    return x * x


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_joblib_results_in_call_order(backend):
    import joblib

    calls = (joblib.delayed(_square)(i) for i in range(20))
    with processes.joblib_results(calls, workers=2, backend=backend) as results:
        assert list(results) == [i * i for i in range(20)]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored after the loop


def test_sigterm_raises_system_exit_inside_the_block():
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with pytest.raises(SystemExit) as exc, processes.sigterm_raises():
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler)  # never send SIGTERM to the test process without it
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)
    assert exc.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_sigterm_handler_only_in_the_main_thread():
    seen = []

    def run():
        with processes.sigterm_raises():
            seen.append(signal.getsignal(signal.SIGTERM))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == [signal.SIG_DFL]


def test_an_application_handler_is_left_alone():
    def mine(signum, frame):
        pass

    old = signal.signal(signal.SIGTERM, mine)
    try:
        with processes.sigterm_raises():
            assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, old)


@pytest.mark.parametrize("module", ["processes", "callables", "checkpoints", "planning"])
def test_importing_the_plumbing_does_not_import_numba(module):
    code = f"import sys, audit.simulation.{module}; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.strip() == "False"


def test_the_examples_run():
    import doctest

    assert doctest.testmod(processes).failed == 0


def _dies_after_two():
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    yield "a"
    yield "b"
    raise TerminatedWorkerError("A worker process managed by the executor was unexpectedly "
                                "terminated.\n\nThe exit codes of the workers are "
                                "{SIGKILL(-9)}\nDetailed tracebacks ...")


def test_a_dead_worker_is_one_worker_died_error_naming_the_run():
    from audit.simulation.processes import WorkerDiedError, deaths_reported

    got = []
    with pytest.raises(WorkerDiedError) as info:
        for r in deaths_reported(_dies_after_two(), "main run",
                                 lambda: f"chunk {len(got)} was pending"):
            got.append(r)
    assert got == ["a", "b"]
    assert str(info.value) == (
        "a worker process died during the main run while chunk 2 was pending "
        "(TerminatedWorkerError; exit codes {SIGKILL(-9)}): an implementation that calls "
        "os._exit, a signal, or the system out of memory")
    assert info.value.__cause__ is None


def test_other_errors_pass_through_deaths_reported():
    from concurrent.futures.process import BrokenProcessPool

    from audit.simulation.processes import WorkerDiedError, deaths_reported

    def fails():
        yield 1
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        list(deaths_reported(fails(), "pilot", lambda: "x"))

    def broken():
        raise BrokenProcessPool("pool broke")
        yield

    with pytest.raises(WorkerDiedError, match=r"during the pilot while x \(BrokenProcessPool\)"):
        list(deaths_reported(broken(), "pilot", lambda: "x"))
