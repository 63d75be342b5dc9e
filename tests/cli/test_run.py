"""``python -m audit run``: the refusals and exit statuses of the hardening round — integers
written as floats, output targets that are not regular files, the config as its own output,
wrong table types, failures once the work has started (exit 3) — each through the real
command."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from audit.cli.run import EXIT_FAILED, _fmt
from tests.conftest import ROOT, audit_doc, to_toml

GOOD = to_toml(audit_doc(**{"audit.trials": 20_000}))
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "audit", "run", *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=cwd, env=ENV)


def _cfg(tmp_path: Path, text: str = GOOD) -> Path:
    p = tmp_path / "cfg.toml"
    p.write_text(text)
    return p


def test_trials_written_as_a_float_run_and_in_toml_too(tmp_path):
    cfg = _cfg(tmp_path, GOOD.replace("trials = 20000", "trials = 2e4"))
    out = _run(cfg, "--trials", "3e4", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "30,000 trials per side" in out.stdout


def test_json_to_dev_null_writes_through_and_keeps_the_device(tmp_path):
    out = _run(_cfg(tmp_path), "--json", "/dev/null", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_json_to_a_full_disk_exits_3_and_keeps_the_device(tmp_path):
    out = _run(_cfg(tmp_path), "--json", "/dev/full", "--no-progress")
    assert out.returncode == EXIT_FAILED, out.stderr
    assert "error: could not write --json /dev/full" in out.stderr
    assert "Traceback" not in out.stderr and "eps_lower" in out.stdout
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_json_equal_to_the_config_is_refused_before_any_work(tmp_path):
    cfg = _cfg(tmp_path)
    out = _run(cfg, "--json", cfg, "--no-progress")
    assert out.returncode == 2
    assert out.stderr.startswith("error: --json must not be the config file itself")
    assert cfg.read_text() == GOOD


@pytest.mark.parametrize("text, needle", [
    ("scenario = 3\n[missingness]\nkind = 'mcar-iid'\n", "[scenario] must be a table"),
    ('missingness = "mcar-iid"\n' + GOOD.replace('[missingness]\nkind = "mcar-fixed"\n'
                                                 'observed = 3\np_star = 0.5\n', ""),
     "[missingness] must be a table"),
    ("audit = [1, 2]\n" + GOOD.split("[audit]")[0], "[audit] must be a table, got audit=[1, 2]"),
])
def test_tables_of_the_wrong_type_are_one_error_line(tmp_path, text, needle):
    out = _run(_cfg(tmp_path, text))
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and needle in out.stderr, out.stderr


def test_a_mechanism_failing_mid_run_exits_3_with_what_was_kept(tmp_path):
    cfg = _cfg(tmp_path, to_toml({
        "implementation": {"target": "tests.adapters.example_mechanisms:fails_mid_run",
                           "epsilon": 1.0, "chunk": 100, "batch": False},
        "scenario": {"query": "sum", "d": 2, "n": 4},
        "missingness": {"kind": "mcar-iid", "rate": 0.2},
        "audit": {"trials": 2000, "pilot_trials": 1000}}))
    out = _run(cfg, "--no-progress", cwd=ROOT)
    assert out.returncode == EXIT_FAILED, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "out of budget" in lines[0] and "nothing was saved" in lines[0]


def test_huge_values_are_printed_in_scientific_notation():
    assert _fmt(1e308) == "1e+308" and _fmt(0.15) == "0.1500" and _fmt(None) == "n/a"


def test_the_interrupt_line_counts_this_runs_chunk_files_only(tmp_path):
    from audit.cli.run import _interrupted
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.runner import run_audit

    ck = tmp_path / "ck"
    ck.mkdir()
    for i in range(5):  # another run's files in the same folder
        (ck / f"0123456789abcdef0123_c{i:012d}.npz").write_bytes(b"")
    cfg = config_from_dict(audit_doc(**{"audit.trials": 20_000, "audit.checkpoint": str(ck)}))
    run_audit(cfg)
    ours = len(list(ck.glob("*.npz"))) - 5
    assert ours >= 1
    assert _interrupted(cfg).startswith(f"interrupted: {ours} finished chunk file(s) of this run")


@pytest.mark.parametrize("source, needle", [
    ("def f(data, rng)\n    return 0.0\n", "has a syntax error"),
    ("raise RuntimeError('boom at import')\n", "raised RuntimeError: boom at import"),
    ("import sys\nsys.exit(0)\n", "raised SystemExit"),
])
def test_a_target_module_that_fails_to_import_is_one_error_line(tmp_path, source, needle):
    (tmp_path / "bad_mechanism.py").write_text(source)
    cfg = _cfg(tmp_path, to_toml({
        "implementation": {"target": "bad_mechanism:f", "epsilon": 1.0},
        "scenario": {"query": "sum", "d": 2}, "missingness": {"kind": "mcar-iid"},
        "audit": {"trials": 1000}}))
    env = {**ENV, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    out = subprocess.run([sys.executable, "-m", "audit", "run", str(cfg)], capture_output=True,
                         text=True, timeout=600, env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and needle in out.stderr, out.stderr


def test_a_mechanism_printing_into_a_closed_pipe_exits_141(tmp_path):
    (tmp_path / "chatty.py").write_text(
        "import numpy as np\n"
        "def f(data, rng):\n"
        "    print('calling', flush=True)\n"
        "    return float(np.nan_to_num(data).sum() + rng.laplace(scale=4.0))\n")
    cfg = _cfg(tmp_path, to_toml({
        "implementation": {"target": "chatty:f", "epsilon": 1.0, "batch": False},
        "scenario": {"query": "sum", "d": 2}, "missingness": {"kind": "mcar-iid"},
        "audit": {"trials": 5000}}))
    env = {**ENV, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    with subprocess.Popen([sys.executable, "-m", "audit", "run", str(cfg), "--no-progress"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          cwd=tmp_path) as proc:
        proc.stdout.readline()  # read one line, then go away as `| head -1` does
        proc.stdout.close()
        err = proc.stderr.read().decode()
        status = proc.wait(timeout=600)
    assert status == 141, err
    assert "Traceback" not in err and "error:" not in err


def test_a_searched_pair_is_named_in_the_summary_and_the_json(tmp_path):
    cfg = _cfg(tmp_path, to_toml({
        "implementation": {"target": "tests.adapters.example_mechanisms:noisy_sum",
                           "epsilon": 1.0, "params": {"bound": 1.0, "scale": 4.0}},
        "scenario": {"query": "sum", "d": 2, "n": 3},
        "missingness": {"kind": "mcar-iid", "rate": 0.2},
        "search": {"families": ["corners"], "cap": 3, "calls": 200},
        "audit": {"trials": 2000}}))
    out = _run(cfg, "--no-progress", "--json", tmp_path / "r.json", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "pair       searched: corners" in out.stdout and "best of 3 candidates" in out.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(doc["search"]["candidates"]) == 3 and doc["search"]["cap"] == 3
    assert "pair" in doc["config"] and "search" not in doc["config"]


_HANGING = '''
import os, time
import numpy as np
CALLS = [0]
def mech(data, rng):
    CALLS[0] += 1
    if CALLS[0] > 10:
        open(os.environ["HANG_MARKER"], "w").close()
        time.sleep(10**6)
    return float(np.nansum(data)) + rng.laplace(scale=2.0)
'''


@pytest.mark.parametrize("jobs,after,table", [
    ("1", 10, ""), ("2", 10, ""),  # the timing before the pilot
    ("1", 200, ""),  # the pilot
    ("1", 200, "[search]\ncalls = 500\n"),  # an audit with a searched pair
    ("1", 200, "[strata]\nby = 'missing-count'\nrates = [0.0, 0.3]\n"),
    ("1", 200, "[releases]\ncount = 3\n"),
], ids=["timing-1", "timing-2", "pilot", "search", "strata", "releases"])
def test_ctrl_c_reaches_a_mechanism_that_hangs_in_every_phase(tmp_path, jobs, after, table):
    """A mechanism that hangs on its 11th call hangs in the timing before the pilot, on its
    201st past it (the pilot, a search round, a stratified or k-release audit); Ctrl-C (even
    with SIGINT ignored by the parent: the CLI installs its own handler) is exit 130 with one
    ``interrupted:`` line and no traceback."""
    import os
    import signal
    import time

    (tmp_path / "hangmech.py").write_text(_HANGING.replace("> 10", f"> {after}"))
    cfg = tmp_path / "hang.toml"
    cfg.write_text('[scenario]\nnoise = "laplace"\nepsilon = 1.0\nquery = "sum"\nd = 1\nn = 5\n'
                   '[missingness]\nkind = "mcar-iid"\nrate = 0.3\n[implementation]\n'
                   'target = "hangmech:mech"\nepsilon = 1.0\n[audit]\ntrials = 2000\nseed = 1\n'
                   + table)
    marker = tmp_path / "hanging"
    env = {**os.environ, "HANG_MARKER": str(marker),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, "-m", "audit", "run", str(cfg), "--jobs", jobs,
                             "--no-progress"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.time() + 120
        while not marker.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert marker.exists(), proc.communicate(timeout=5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().startswith("interrupted:")


def test_an_unregistered_backend_is_one_error_line_before_any_work(tmp_path):
    # a backend registered in another process is not known here: refused by its flag, with
    # the names this process knows, before the config's plan or any draw
    out = _run(_cfg(tmp_path), "--backend", "spark", "--json", tmp_path / "r.json")
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: --backend must be one of cpu, cuda, dask or a joblib backend registered by "
        "name (")
    assert lines[0].endswith("got --backend='spark'") and "loky" in lines[0]
    assert not (tmp_path / "r.json").exists()
    # and the config key, when the config names it
    bad = _cfg(tmp_path, GOOD.replace("trials = 20000", 'trials = 20000\nbackend = "ray"'))
    out = _run(bad)
    assert out.returncode == 2
    assert out.stderr.startswith("error: audit.backend must be one of cpu, cuda, dask or a "
                                 "joblib backend registered by name (")


def test_a_joblib_backend_by_name_runs_from_the_command_line(tmp_path):
    out = _run(_cfg(tmp_path), "--backend", "threading", "--jobs", "2", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "20,000 trials per side" in out.stdout
