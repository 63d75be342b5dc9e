"""Every combination the config can express is refused before any work or runs to the end.

The axes are generated from the package's own vocabularies, not listed by hand: the target
kinds (the model, an implementation), the pair sources (the worst case, ``[pair]``,
``[search]``), the designs (each ``audit.mode``, each ``releases.masks`` regime, ``[strata]``,
``[claim]``),
every registered attack and every noise kind. A test checks that the generated configs reach
every part class :mod:`audit.pipeline.parts` defines, so a new part, attack, mode or mask
regime joins the enumeration without an edit here.

Each combination goes through the command line in this process (``python -m audit run``'s
``main``): a refusal is exit 2 with one ``error:`` line, which the command returns only from
its preparation (the config, the parts' answers, the subject), before any call or draw; an
accepted combination runs a tiny audit and exits 0 or 1 with its summary. By default every
refusal is checked and a covering subset of the accepted combinations (each target × pair
source × design, each attack, each noise at least once) runs through the command line;
``-m slow`` prepares every other accepted combination through the command line and runs each
to the end.
"""

from __future__ import annotations

import itertools
import math

import pytest

import audit.pipeline.runner as runner_module
from audit.cli import main
from audit.enums import AuditMode, MaskRegime, NoiseKind
from audit.pipeline import designs as ds
from audit.pipeline import parts as pt
from audit.pipeline.config import config_from_dict
from audit.protocols import available_attacks
from tests.conftest import to_toml

N = 3
TARGET = "tests.adapters.example_mechanisms:noisy_sum"
TARGETS = ("model", "implementation")
PAIR_SOURCES = ("worst-case", "pair", "search")
DESIGNS = (tuple(f"mode:{m.value}" for m in AuditMode)
           + tuple(f"releases:{m.value}" for m in MaskRegime) + ("strata", "claim"))
ATTACKS = tuple(sorted(available_attacks()))
NOISES = tuple(n.value for n in NoiseKind)
COMBINATIONS = tuple(itertools.product(TARGETS, PAIR_SOURCES, DESIGNS, ATTACKS, NOISES))


def combination_doc(target: str, pairs: str, design: str, attack: str, noise: str) -> dict:
    """The config document of one combination: a sum of n = 3 records of one feature, 20 %
    MCAR, 1,000 draws or calls per side."""
    doc = {"scenario": {"noise": noise, "epsilon": 1.0, "query": "sum", "d": 1, "n": N,
                        "bound": 1.0},
           "missingness": {"kind": "mcar-iid", "rate": 0.2},
           "audit": {"trials": 1_000, "seed": 1, "bins": 50, "attack": attack}}
    if noise == NoiseKind.GAUSSIAN.value:
        doc["scenario"]["delta"] = 1e-5
    if target == "implementation":
        doc["implementation"] = {"target": TARGET, "epsilon": 1.0,
                                 "params": {"bound": 1.0, "scale": 2.0}}
    if pairs == "pair":
        doc["pair"] = {"z": [[1.0]] + [[0.0]] * (N - 1), "z_prime": [[-1.0]] + [[0.0]] * (N - 1)}
    elif pairs == "search":
        doc["search"] = {"families": ["corners"], "cap": 2, "calls": 200}
    kind, _, value = design.partition(":")
    if kind == "mode":
        doc["audit"]["mode"] = value
    elif kind == "releases":
        doc["releases"] = {"count": 2, "masks": value}
        if value == MaskRegime.PERSISTENT.value:
            doc["releases"]["persistence"] = 0.5
    elif kind == "claim":
        doc["claim"] = {"curve": "gaussian"}
    else:
        doc["strata"] = {"rates": [0.0, 0.2]}
    return doc


class _WouldRun(Exception):
    """Raised in place of the run where a combination is only prepared."""


def _command(combination, tmp_path, capsys, monkeypatch, *, run: bool):
    """Exit status, stdout and stderr of ``python -m audit run`` on the combination's config."""
    path = tmp_path / ("-".join(combination).replace(":", "_") + ".toml")
    path.write_text(to_toml(combination_doc(*combination)))
    if not run:
        def would_run(*_args, **_kwargs):
            raise _WouldRun
        monkeypatch.setattr(runner_module, "run_audit", would_run)
    try:
        status = main(["run", str(path), "--no-progress"])
    except _WouldRun:
        status = None
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _accepted(combination) -> bool:
    try:
        cfg = config_from_dict(combination_doc(*combination))
        pt.check_parts(cfg, black_box=pt.names_black_box(cfg))
    except ValueError:
        return False
    return True


ACCEPTED = tuple(c for c in COMBINATIONS if _accepted(c))


def _covering(combinations) -> tuple:
    """The first combination of each target × pair source × design, then of each attack and
    each noise not yet seen (the generated order: the default run's subset)."""
    chosen: list = []
    for key in (lambda c: c[:3], lambda c: c[3], lambda c: c[4]):
        seen = {key(c) for c in chosen}
        for c in combinations:
            if key(c) not in seen:
                chosen.append(c)
                seen.add(key(c))
    return tuple(chosen)


COVERING = _covering(ACCEPTED)


def test_the_axes_reach_every_part_the_package_defines():
    defined = {obj for module in (pt, ds) for obj in vars(module).values()
               if isinstance(obj, type) and obj.__module__ == module.__name__
               and hasattr(obj, "supports")
               and obj not in (ds.DesignPart, ds.RegisteredDesign)}  # (base, plug-in's)
    reached = set()
    for c in ACCEPTED:
        cfg = config_from_dict(combination_doc(*c))
        parts = pt.parts_of(cfg, black_box=pt.names_black_box(cfg))
        reached |= {type(parts.target), type(parts.pairs), *map(type, parts.designs)}
    assert defined and reached == defined, defined ^ reached
    assert len(COMBINATIONS) == (len(TARGETS) * len(PAIR_SOURCES) * len(DESIGNS)
                                 * len(ATTACKS) * len(NOISES))
    # both outcomes occur: a vocabulary where everything runs or nothing does tests nothing
    assert 0 < len(ACCEPTED) < len(COMBINATIONS)
    assert {c[3] for c in COVERING} == {c[3] for c in ACCEPTED}
    assert {c[:3] for c in COVERING} == {c[:3] for c in ACCEPTED}


@pytest.mark.parametrize("combination", [c for c in COMBINATIONS if c not in ACCEPTED],
                         ids="-".join)
def test_a_refused_combination_is_one_error_line_before_any_work(combination, tmp_path,
                                                                  capsys, monkeypatch):
    status, _, err = _command(combination, tmp_path, capsys, monkeypatch, run=False)
    assert status == 2, (status, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err


@pytest.mark.slow
@pytest.mark.parametrize("combination", [c for c in ACCEPTED if c not in COVERING],
                         ids="-".join)
def test_an_accepted_combination_is_prepared(combination, tmp_path, capsys, monkeypatch):
    status, _, err = _command(combination, tmp_path, capsys, monkeypatch, run=False)
    assert status is None, (status, err)


@pytest.mark.parametrize("combination", COVERING, ids="-".join)
def test_an_accepted_combination_runs_a_tiny_audit(combination, tmp_path, capsys,
                                                   monkeypatch):
    status, out, err = _command(combination, tmp_path, capsys, monkeypatch, run=True)
    assert status in (0, 1), (status, err)
    assert "eps_lower" in out, out


@pytest.mark.slow
@pytest.mark.parametrize("combination", ACCEPTED, ids="-".join)
def test_every_accepted_combination_runs_a_tiny_audit(combination):
    result = runner_module.run_audit(config_from_dict(combination_doc(*combination)))
    assert math.isfinite(result.eps_lower) and result.eps_lower >= 0.0
