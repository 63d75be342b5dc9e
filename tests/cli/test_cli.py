"""The command line: run; bad input exits 2 before any work (suite, report: tests/experiments)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from audit.cli import main
from tests.conftest import audit_doc, to_toml

GOOD = to_toml(audit_doc())


def _write(tmp_path: Path, text: str, name="cfg.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_run_prints_summary_and_writes_json(tmp_path, capsys):
    cfg = _write(tmp_path, GOOD)
    out = tmp_path / "res.json"
    assert main(["run", str(cfg), "--trials", "5000", "--seed", "5", "--json", str(out),
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "eps_lower" in text and "eps_pair" in text and "RPS Theorem 4.5" in text
    doc = json.loads(out.read_text())
    assert doc["trials"] == 5000 and doc["seed"] == 5
    assert doc["eps_lower"] <= doc["eps_pair"] <= doc["eps_theory"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (GOOD.replace("seed = 3", "seed = 3\ncolour = 1"), "audit.colour"),
        (GOOD.replace("epsilon = 1.0", "epsilon = -1.0"), "scenario.epsilon"),
        (GOOD.replace('kind = "mcar-fixed"', 'kind = "mcar-fancy"'), "mcar-fancy"),
        ("[scenario\n", "not valid TOML"),
    ],
)
def test_run_bad_config_exits_2_and_keeps_results(tmp_path, capsys, text, needle):
    cfg = _write(tmp_path, text)
    out = tmp_path / "res.json"
    out.write_text('{"kept": true}')
    assert main(["run", str(cfg), "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and needle in err and len(err.splitlines()) == 1
    assert json.loads(out.read_text()) == {"kept": True}


def test_run_missing_file_and_bad_override(tmp_path, capsys):
    assert main(["run", str(tmp_path / "none.toml")]) == 2
    assert "not found" in capsys.readouterr().err
    cfg = _write(tmp_path, GOOD)
    assert main(["run", str(cfg), "--trials", "0"]) == 2
    assert "audit.trials" in capsys.readouterr().err


def test_usage_errors_exit_2_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "audit", "run"], capture_output=True,
                          text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("error:")


def test_setting_outside_the_theorems_exits_2_before_sampling(tmp_path, capsys):
    # mcar-iid with r = 1 never observes the record: rho = 0 is outside Lemma 4.4's (0, 1].
    cfg = _write(tmp_path, GOOD.replace('kind = "mcar-fixed"\nobserved = 3\np_star = 0.5',
                                        'kind = "mcar-iid"\nrate = 1.0'))
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "rho" in err


def test_run_implementation_config_refuses_a_failing_implementation(tmp_path, capsys):
    cfg = tmp_path / "impl.toml"
    cfg.write_text(to_toml({
        "implementation": {"target": "tests.adapters.example_mechanisms:explode",
                           "epsilon": 1.0},
        "scenario": {"query": "sum", "d": 2},
        "missingness": {"kind": "mcar-iid", "rate": 0.2},
        "audit": {"trials": 1000}}))
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert "raised" in err[0] or "explode" in err[0]


def test_run_unknown_adapter_lists_the_available_ones(tmp_path, capsys):
    cfg = tmp_path / "impl.toml"
    cfg.write_text(to_toml({
        "implementation": {"target": "diffprivlib:histogram2d", "epsilon": 1.0},
        "scenario": {"query": "sum", "d": 2}, "missingness": {"kind": "mcar-iid"}}))
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "nanmean" in err and err.count("\n") == 1


# ------------------------------------------------------------------ the real command, as users
def _command(args, **kw):
    return subprocess.run([sys.executable, "-m", "audit", *args], capture_output=True,
                          text=True, timeout=600, **kw)


def test_version_and_console_script():
    out = _command(["--version"])
    assert out.returncode == 0 and out.stdout.startswith("missingness-audit ")


def test_an_uninstalled_checkout_is_told_to_install(monkeypatch, capsys):
    """Run from a source tree never installed (no distribution metadata, so no ``suite``): one
    ``error:`` line naming the install command, exit 2, no traceback."""
    import importlib.metadata

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert main(["suite"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "pip install -e ." in err


def test_stdout_closed_early_exits_141_without_traceback(monkeypatch, capsys):
    """``python -m audit ... | head -1``: the reader went away; status 128 + SIGPIPE, quietly."""
    import audit.cli
    import audit.cli.bound

    def closed_pipe(_args):
        raise BrokenPipeError(32, "Broken pipe")

    redirected = []
    monkeypatch.setattr(audit.cli.bound, "main", closed_pipe)
    monkeypatch.setattr(audit.cli.os, "dup2", lambda fd, to: redirected.append(to))
    monkeypatch.setattr(audit.cli.os, "open", lambda *a: -1)
    monkeypatch.setattr(sys, "stdout", SimpleNamespace(fileno=lambda: 1))
    assert main(["bound", "--mechanism", "laplace", "--epsilon", "1", "--p-star", "0.5"]) == 141
    assert redirected == [1]
    assert "Traceback" not in capsys.readouterr().err


def test_ctrl_c_in_a_command_without_its_own_handler_is_130_without_traceback(monkeypatch,
                                                                              capsys):
    import audit.cli.bound

    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(audit.cli.bound, "main", interrupted)
    assert main(["bound", "--mechanism", "laplace", "--epsilon", "1", "--p-star", "0.5"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("interrupted: bound") and err.count("\n") == 1


def test_jobs_1000_is_capped_once_and_runs(tmp_path):
    cfg = _write(tmp_path, GOOD)
    out = _command(["run", str(cfg), "--jobs", "1000", "--no-progress"])
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("capped at") == 1 and "Traceback" not in out.stderr


def test_trials_beyond_what_can_run_are_refused_before_work(tmp_path):
    cfg = _write(tmp_path, GOOD)
    for trials, needle in ((10**15, "would take about"), (10**20, "at most 1e+18"),
                           (2**63 - 1, "at most 1e+18")):
        out = _command(["run", str(cfg), "--trials", str(trials), "--no-progress"])
        assert out.returncode == 2, (trials, out.stderr)
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ")
        assert needle in out.stderr


def test_exit_status_1_when_a_ceiling_is_violated(tmp_path):
    # A noisy sum claiming ε = 1 with the noise of ε = 4: the audit refutes the claim
    def cfg(scale):
        return _write(tmp_path, to_toml({
            "implementation": {"target": "tests.adapters.example_mechanisms:noisy_sum",
                               "epsilon": 1.0, "params": {"bound": 1.0, "scale": scale}},
            "scenario": {"query": "sum", "d": 2, "n": 10},
            "missingness": {"kind": "mcar-iid", "rate": 0.2},
            "audit": {"trials": 20000}}), name=f"s{scale}.toml")

    out = tmp_path / "r.json"
    bad = _command(["run", str(cfg(1.0)), "--json", str(out), "--no-progress"])
    assert bad.returncode == 1, bad.stderr
    assert "VIOLATION: " in bad.stdout and json.loads(out.read_text())["violations"]
    good = _command(["run", str(cfg(4.0)), "--json", str(out), "--no-progress"])
    assert good.returncode == 0 and json.loads(out.read_text())["violations"] == []


def _interrupt(args, tmp_path, wait_for):
    """Start ``python -m audit ARGS``, wait for ``wait_for()``, send it Ctrl-C (SIGINT).

    The child gets the default SIGINT handling whatever this process inherited (under
    ``trap '' INT`` a child would inherit SIG_IGN and Python would never raise
    KeyboardInterrupt), runs in its own process group, and that group is killed whatever
    happens, so no audit is left running after the test.
    """
    import os
    import signal
    import time

    def default_sigint():
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-m", "audit", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=default_sigint)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not wait_for() and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        return proc.returncode, err
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_on_run_says_what_was_kept_and_how_to_resume(tmp_path):
    cfg = _write(tmp_path, GOOD)
    ck = tmp_path / "ck"
    code, err = _interrupt(["run", str(cfg), "--trials", "3000000000", "--checkpoint", str(ck),
                            "--no-progress", "--max-hours", "100"], tmp_path,
                           lambda: ck.is_dir() and any(ck.glob("*.npz")))
    assert code == 130 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted: ") and "rerun the same command to resume" in last
    assert "finished chunk file(s)" in last


def test_ctrl_c_on_suite_says_what_was_kept(tmp_path):
    results = tmp_path / "results"
    code, err = _interrupt(["suite", "--results", str(results), "--no-progress"], tmp_path,
                           lambda: results.is_dir() and any(results.glob("*.json")))
    assert code == 130 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted: finished experiments kept in") and "--resume" in last


@pytest.mark.cuda
def test_backend_cuda_without_a_device_is_refused_before_work(tmp_path):
    pytest.importorskip("numba_cuda")
    cfg = _write(tmp_path, GOOD)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = _command(["run", str(cfg), "--backend", "cuda", "--checkpoint",
                    str(tmp_path / "ck"), "--no-progress"],
                   env={**env, "CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: backend='cuda' found no CUDA device")
    assert out.stderr.count("\n") == 1 and not (tmp_path / "ck").exists()


@pytest.mark.cuda
def test_backend_cuda_on_the_simulator_gives_the_cpu_result(tmp_path):
    """The whole audit (model selection, main run) on numba-cuda's simulator: every number
    of the result equals the CPU run's."""
    pytest.importorskip("numba_cuda")
    cfg = _write(tmp_path, GOOD)
    docs = []
    for backend, sim in (("cpu", None), ("cuda", "1")):
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
        if sim:
            env["NUMBA_ENABLE_CUDASIM"] = sim
        res = tmp_path / f"{backend}.json"
        out = _command(["run", str(cfg), "--backend", backend, "--trials", "500",
                        "--no-progress", "--json", str(res)], env=env)
        assert out.returncode == 0, out.stderr
        doc = json.loads(res.read_text())
        assert doc["config"]["audit"].pop("backend") == backend
        doc.pop("seconds"), doc.pop("timings")
        docs.append(doc)
    assert docs[0] == docs[1]
