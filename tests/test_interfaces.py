"""``audit.interfaces``: the one home of every protocol, light to import, and its seams open.

- every ``typing.Protocol`` of the package is defined in ``audit/interfaces.py`` (an AST scan
  of ``audit/``), and each old module re-exports the same object;
- importing it imports no numpy, scipy or numba;
- a user's own projection class (the ``Projection`` protocol, no built-in base) is counted by
  a statistic, scored, refused by the engine with one line, and runs a whole black-box audit
  through an attack of the user's.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import audit.interfaces as interfaces
import audit.protocols
from audit.mixture import Mixture
from audit.protocols import BlackBoxAttack, Pilot, Score
from audit.statistics import PROJECTIONS, Statistic, histogram

ROOT = Path(__file__).resolve().parents[1]


def _protocol_classes(path: Path) -> list[str]:
    """Names of the classes in ``path`` with ``Protocol`` among their bases."""
    tree = ast.parse(path.read_text())
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and any(getattr(b, "id", getattr(b, "attr", None)) == "Protocol" for b in node.bases)]


def test_every_protocol_is_defined_in_interfaces_only():
    elsewhere = {str(p.relative_to(ROOT)): _protocol_classes(p)
                 for p in sorted((ROOT / "audit").rglob("*.py")) if p.name != "interfaces.py"}
    assert {k: v for k, v in elsewhere.items() if v} == {}
    assert set(_protocol_classes(ROOT / "audit" / "interfaces.py")) == set(interfaces.__all__)


@pytest.mark.parametrize(("module", "name"), [
    ("audit.protocols", "Query"), ("audit.protocols", "MissingnessMechanism"),
    ("audit.statistics", "Projection"), ("audit.model.implementation", "Implementation"),
    ("audit.pipeline.subject", "Subject"), ("audit.pipeline.subject", "Monitor"),
    ("audit.pipeline.parts", "Part"), ("audit.pipeline.parts", "Design"),
    ("audit.estimation.witness", "Bound"),
])
def test_the_old_modules_re_export_the_protocols(module, name):
    import importlib

    assert getattr(importlib.import_module(module), name) is getattr(interfaces, name)


def test_importing_interfaces_imports_nothing_heavy():
    code = ("import sys, audit.interfaces; "
            "print(sorted(m for m in ('numpy', 'scipy', 'numba') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


class FirstCoordinate:
    """A user's projection: the first coordinate of each output, halved. No base class."""

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return 0.5 * (x.reshape(x.shape[0], -1)[:, 0] if x.ndim else x.reshape(1))

    def to_dict(self) -> dict:
        return {"kind": "first-coordinate", "factor": 0.5}


def test_a_user_projection_satisfies_the_protocol_and_is_counted():
    proj = FirstCoordinate()
    assert isinstance(proj, interfaces.Projection) and not isinstance(proj, PROJECTIONS)
    stat = Statistic(proj, [-1.0, 0.0, 1.0])
    x = np.array([[-4.0, 9.0], [0.4, 9.0], [1.0, np.nan], [np.nan, 0.0]])
    assert stat.evaluate(x).tolist()[:3] == [-2.0, 0.2, 0.5]
    assert stat.counts(x).tolist() == histogram(0.5 * x[:, 0], stat.edges).tolist()
    assert stat.to_dict() == {"kind": "first-coordinate", "factor": 0.5,
                              "edges": [-1.0, 0.0, 1.0]}
    score = Score("user", proj, lambda v: -v)
    assert score(x[:2]).tolist() == [2.0, -0.2]
    assert stat.bin_scores(score).shape == (stat.n_bins,)


@pytest.mark.parametrize("bad", [object(), "output", np.zeros(3)])
def test_an_object_without_the_members_is_refused(bad):
    with pytest.raises(ValueError, match="projection must be"):
        Statistic(bad, [0.0, 1.0])
    with pytest.raises(ValueError, match=r"projection must be a projection \(an object with "
                                         r"evaluate and to_dict"):
        Score("user", bad)


def test_the_engine_refuses_a_user_projection_in_one_line():
    from audit.enums import NoiseKind
    from audit.simulation.engine import run_histograms

    P = Mixture([1.0], [0.0], NoiseKind.LAPLACE, 1.0)
    Q = Mixture([1.0], [1.0], NoiseKind.LAPLACE, 1.0)
    with pytest.raises(ValueError, match=r"statistic.projection must be one of OutputValue, "
                                         r"ExactLLR, LinearProjection .* got a FirstCoordinate"):
        run_histograms(P, Q, Statistic(FirstCoordinate(), [0.0, 1.0]), 100, 0)


class UserAttack(BlackBoxAttack):
    """A user's black-box attack scoring with the user's projection."""

    name = "user-first-coordinate"

    def fit(self, pilot: Pilot) -> Score:
        sign = 1.0 if np.median(pilot.p) >= np.median(pilot.q) else -1.0
        return Score(self.name, FirstCoordinate(), lambda v: sign * v)


class _EntryPoint:
    def __init__(self, cls: type) -> None:
        self.cls = cls

    def load(self) -> type:
        return self.cls


def test_a_user_projection_runs_a_black_box_audit(monkeypatch):
    import dataclasses

    from audit.model.implementation import CallableImplementation, Claim
    from audit.pipeline.config import ImplementationConfig, config_from_dict
    from audit.pipeline.runner import run_audit

    registered = audit.protocols.available_attacks()
    monkeypatch.setattr(audit.protocols, "available_attacks",
                        lambda: {**registered, UserAttack.name: _EntryPoint(UserAttack)})

    def release(data, rng):  # ε = 1 on the pair below: the first entry plus Laplace(2)
        return float(np.clip(np.nan_to_num(data[0, 0]), -1.0, 1.0) + rng.laplace(scale=2.0))

    impl = CallableImplementation(release, Claim(0.2, 0.0, "understated"), "user-release")
    z = np.zeros((3, 1))
    zp = z.copy()
    z[0, 0], zp[0, 0] = -1.0, 1.0
    cfg = config_from_dict({
        "scenario": {"query": "sum", "mechanism": "laplace", "epsilon": 1.0},
        "missingness": {"kind": "mcar-iid", "rate": 0.0},
        "pair": {"z": z.tolist(), "z_prime": zp.tolist()},
        "audit": {"trials": 20_000, "seed": 3, "attack": UserAttack.name,
                  "pilot_trials": 2000, "bins": 100}})
    cfg = dataclasses.replace(cfg, implementation=ImplementationConfig("python:test", 0.2,
                                                                       0.0, chunk=5000))
    res = run_audit(cfg, implementation=impl)
    assert res.attack == UserAttack.name
    assert 0.2 < res.eps_lower <= 1.0 and res.ceiling_violations()


# --------------------------------------------------------------------------- typed seams
def test_no_annotation_of_the_interfaces_is_any():
    tree = ast.parse((ROOT / "audit" / "interfaces.py").read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "Any" not in names | attrs


def test_the_package_objects_satisfy_the_structural_types_the_seams_name():
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.factory import assemble
    from audit.pipeline.subject import FittedPilot
    from audit.statistics import OutputValue
    from tests.conftest import audit_doc

    cfg = config_from_dict(audit_doc())
    parts, subject = assemble(cfg)
    score = Score("test", OutputValue())
    statistic = Statistic(OutputValue(), np.linspace(-1.0, 1.0, 5))
    fitted = FittedPilot(Pilot(np.zeros(4), np.zeros(4)), 2, score, statistic, 4, lambda p: score)
    assert isinstance(cfg, interfaces.ConfigLike) and isinstance(parts, interfaces.PartsLike)
    assert isinstance(score, interfaces.ScoreLike)
    assert isinstance(statistic, interfaces.StatisticLike)
    assert isinstance(fitted, interfaces.FittedPilotLike)
    assert isinstance(subject, interfaces.Subject)
    # and an object without the members is not taken for one
    assert not isinstance(object(), interfaces.ScoreLike)
    assert not isinstance(np.zeros(3), interfaces.StatisticLike)


def test_the_records_the_interfaces_name_are_the_old_modules_objects():
    import audit.model.batch_check
    import audit.model.implementation
    import audit.pipeline.ceilings
    import audit.pipeline.subject
    import audit.records as records

    for module, names in ((audit.protocols, ("Pilot", "Laws", "IndependentMasks",
                                             "FixedCountMasks", "MaskStructure")),
                          (audit.pipeline.ceilings, ("Ceiling", "Comparison", "ClaimReport")),
                          (audit.pipeline.subject, ("Setting",)),
                          (audit.model.implementation, ("Claim",)),
                          (audit.model.batch_check, ("BatchCheck",))):
        for name in names:
            assert getattr(module, name) is getattr(records, name), (module.__name__, name)
    assert audit.model.batch_check.TESTS == records.BATCH_TESTS


#: the members of an implementation the protocol leaves optional (audit.records.Traits)
OPTIONAL_MEMBERS = {"name", "params", "claim", "batch", "batch_in_one_call",
                    "batch_check_rule", "cache_identity", "func", "batch_func"}


def _optional_reads(tree: ast.AST) -> list[int]:
    """Lines of ``getattr(x, "<optional member>", ...)`` calls."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "getattr" and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant) and node.args[1].value in OPTIONAL_MEMBERS]


def test_an_implementations_optional_members_are_read_in_one_place():
    # found by scanning the package and the experiments, not from a list of known sites
    root = Path(audit.protocols.__file__).parents[1]
    found = {}
    for path in sorted([*(root / "audit").rglob("*.py"), *(root / "experiments").rglob("*.py")]):
        lines = _optional_reads(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[str(path.relative_to(root))] = lines
    assert set(found) == {"audit/records.py"}, found
    # the scan finds such a read where one is written
    assert _optional_reads(ast.parse('n = getattr(impl, "batch", None)')) == [1]


def test_traits_give_each_absent_member_the_value_its_absence_means():
    from audit.model.implementation import CallableImplementation, Claim
    from audit.records import traits_of

    class Bare:
        def __call__(self, data, rng):
            return 0.0

    t = traits_of(Bare())
    assert (t.name, t.params, t.claim, t.batch, t.batch_in_one_call, t.batch_check_rule,
            t.cache_identity, t.functions) == ("Bare", {}, None, None, False, None, None, ())

    def f(data, rng):
        return 0.0

    def fb(datasets, rng):
        return np.zeros(len(datasets))

    impl = CallableImplementation(f, Claim(1.0), name="mine", batch_func=fb,
                                  params={"a": 1}, batch_in_one_call=True)
    t = traits_of(impl)
    assert (t.name, t.params, t.claim, t.batch, t.batch_in_one_call, t.functions) == \
        ("mine", {"a": 1}, Claim(1.0), fb, True, (f, fb))
    f.batch_in_one_call = "yes"  # only True itself states it
    assert traits_of(f).batch_in_one_call is False
