"""Seeded results do not depend on the CPU that computes them.

Two CPUs of different makes compute numpy's and the kernels' logarithms and exponentials
with different vector code, so the same seeded run sees values that differ in their last
bits. A result may differ there too (1e-12 relative), but no count, region or reported digit
may: a value that ties with a bin edge, and two regions that tie in exact arithmetic (the two
directions of a symmetric pair), are resolved by rules that do not read the last bits
(``audit.statistics.binning_edges``, ``quantise_scores``).

The tests emulate another CPU by moving, at random, one in ten of the values that numpy's
transcendental functions return in every pure-Python module of the package by one ulp (the
size of the difference between two vector implementations), and check the audit's result is
the same. Before the tie rules, these runs moved the three REPORT.md rows below in their 3rd
and 4th digits, exactly as an AMD rerun of Intel's results did. They also rerun those rows
from their recorded configs and compare with the committed results.
"""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit

RESULTS = Path(__file__).resolve().parents[2] / "results"
#: (experiment, row): the rows an AMD rerun of Intel's results moved before the tie rules
ROWS = [("amplification_vs_pstar", "amplification_vs_pstar[p*=1.0]"),
        ("mar_mnar", "mar_mnar[mcar-row p*=0.5]"),
        ("attack_comparison", "attack_comparison[exact-lr,10000]")]
#: emulated CPUs per row
JITTERS = 6
FUNCTIONS = ("log", "exp", "log1p", "expm1", "logaddexp", "tanh", "log2")


def _row(experiment: str, name: str) -> dict:
    doc = json.loads((RESULTS / f"{experiment}.json").read_text())
    (row,) = [r for r in doc["rows"] if r["name"] == name]
    return row


def _audit(row: dict) -> dict:
    cfg = config_from_dict(row["config"], name=row["name"])
    return run_audit(cfg).to_dict()


class _Jittered(types.ModuleType):
    """numpy, with the transcendental functions' results moved by one ulp at random."""

    def __init__(self, seed: int) -> None:
        super().__init__("numpy")
        rng = np.random.default_rng(seed)

        def jitter(f):
            def g(*args, **kwargs):
                out = f(*args, **kwargs)
                if isinstance(out, np.ndarray) and out.dtype == np.float64 and out.size:
                    # exact values (exp(0), log(1), ...) are exact on every CPU
                    move = (rng.random(out.shape) < 0.1) & (out != np.round(out))
                    up = rng.random(out.shape) < 0.5
                    with np.errstate(all="ignore"):
                        moved = np.where(up, np.nextafter(out, np.inf),
                                         np.nextafter(out, -np.inf))
                    out = np.where(move & np.isfinite(out), moved, out)
                return out
            return g

        for name in FUNCTIONS:
            setattr(self, name, jitter(getattr(np, name)))

    def __getattr__(self, name):
        return getattr(np, name)


def _other_cpu(monkeypatch, seed: int) -> None:
    """Every loaded pure-Python module of the package sees a jittered numpy (the numba
    kernels keep theirs: their ``np`` is resolved at compile time)."""
    fake = _Jittered(seed)
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] in ("audit", "attacks") and not name.startswith(
                "audit.simulation") and isinstance(getattr(mod, "np", None), types.ModuleType) \
                and mod.np.__name__ == "numpy":
            monkeypatch.setattr(mod, "np", fake)


def _same(a: dict, b: dict, path: str = "") -> list[str]:
    """Where two result documents differ beyond 1e-12 relative (run times excluded)."""
    out = []
    if isinstance(a, dict):
        for k in a:
            if k not in ("seconds", "timings", "versions"):
                out += _same(a[k], b.get(k) if isinstance(b, dict) else None, f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            out += _same(u, v, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        if not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300):
            out.append(f"{path}: {a!r} != {b!r}")
    elif a != b:
        out.append(f"{path}: {a!r} != {b!r}")
    return out


@pytest.mark.parametrize(("experiment", "name"), ROWS, ids=[n for _, n in ROWS])
def test_committed_rows_reproduce(experiment, name):
    row = _row(experiment, name)
    got = _audit(row)
    for key in ("eps_lower", "eps_point", "eps_pair", "eps_theory"):
        assert math.isclose(got[key], row[key], rel_tol=1e-12), (key, got[key], row[key])
    assert got["witness"]["direction"] == row["witness"]["direction"]
    assert (got["witness"]["k_p"], got["witness"]["k_q"]) == \
        (row["witness"]["k_p"], row["witness"]["k_q"])


@pytest.mark.parametrize(("experiment", "name"), ROWS, ids=[n for _, n in ROWS])
def test_last_bits_of_the_vector_math_change_no_result(experiment, name, monkeypatch):
    row = _row(experiment, name)
    native = _audit(row)
    for seed in range(JITTERS):  # several emulated CPUs: a tie is broken at random by each
        with monkeypatch.context() as m:
            _other_cpu(m, seed)
            assert _same(native, _audit(row)) == [], f"jitter seed {seed}"
