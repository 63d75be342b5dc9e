"""The setting's protocols (``audit.protocols.Query``, ``MissingnessMechanism``): complete,
satisfied by every built-in, and enough for a user's own mechanism.

- every built-in query and mechanism satisfies its protocol: ``isinstance`` and, member by
  member, a callable accepting the protocol's arguments or an attribute of the right type;
- every member the package reads on a query or a mechanism is in the protocol (an AST scan
  of ``audit/``: a protocol that omits a member the code calls fails here);
- a mechanism a user writes by subclassing the public base classes runs through the pair
  search, p*/ρ and the audit plan (no sampling), with the same results as the built-in it
  re-implements.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from audit.enums import MissingnessClass
from audit.model.missingness import (
    MISSINGNESS_KINDS,
    IndependentFeatures,
    MARPivot,
    MCARIid,
    MCARRow,
    Mechanism,
    _IndependentFeatures,
    _Mechanism,
    make_missingness,
)
from audit.model.neighbours import Release, simulate_general, worst_case_pair
from audit.model.queries import QUERY_KINDS, make_query
from audit.protocols import (
    MissingnessMechanism,
    Query,
    missing_members,
    protocol_members,
)

ROOT = Path(__file__).resolve().parents[1]
D, N, B = 3, 5, 1.0
QPARAMS = {"linear": {"weights": [1.0, -2.0, 0.5]}, "projected-mean": {"A": [[1.0, 0.5, -1.0]]}}
#: what the protocols must hold: every member the model layer and the pipeline use
QUERY_MEMBERS = {"name", "check_dimension", "output_dim", "contributions", "evaluate",
                 "fwl_constants", "candidate_records", "separable_values", "params"}
MECHANISM_MEMBERS = {"kind", "missing_class", "check_dimension", "p_star", "rho",
                     "mask_distribution", "sample_masks", "mask_structure", "pair_candidates",
                     "params"}
ATTRIBUTE_TYPES = {"name": str, "kind": str, "missing_class": MissingnessClass}


def _queries():
    return [make_query(name, **QPARAMS.get(name, {})) for name in sorted(QUERY_KINDS)]


def _mechanisms():
    return [make_missingness(kind) for kind in sorted(MISSINGNESS_KINDS)]


def _check_members(obj, protocol) -> None:
    """Each protocol member on ``obj``: a method that accepts the protocol's positional
    arguments, or an attribute of the declared type."""
    for name in protocol_members(protocol):
        declared = vars(protocol).get(name)
        value = getattr(obj, name)
        if callable(declared):
            assert callable(value), name
            wanted = [p for p in inspect.signature(declared).parameters.values()
                      if p.name != "self" and p.default is inspect.Parameter.empty]
            inspect.signature(value).bind(*range(len(wanted)))  # TypeError on a wrong arity
        elif isinstance(declared, property):
            assert not callable(value), name
        else:
            assert isinstance(value, ATTRIBUTE_TYPES[name]), (name, value)


def test_the_protocols_list_every_member_the_package_needs():
    assert set(protocol_members(Query)) == QUERY_MEMBERS
    assert set(protocol_members(MissingnessMechanism)) == MECHANISM_MEMBERS


@pytest.mark.parametrize("query", _queries(), ids=lambda q: q.name)
def test_every_builtin_query_satisfies_the_protocol(query):
    assert isinstance(query, Query)
    assert missing_members(query, Query) == []
    _check_members(query, Query)


@pytest.mark.parametrize("mech", _mechanisms(), ids=lambda m: m.kind)
def test_every_builtin_mechanism_satisfies_the_protocol(mech):
    assert isinstance(mech, MissingnessMechanism)
    assert isinstance(mech, Mechanism)
    assert missing_members(mech, MissingnessMechanism) == []
    _check_members(mech, MissingnessMechanism)
    assert make_missingness(mech.kind, **mech.params()) == mech


def _read_members(root: Path) -> dict[str, set[str]]:
    """Attributes the package reads on variables and fields named ``query`` (a query) or
    ``missingness``/``mech`` (a mechanism); ``cfg.missingness`` is a config table, and the
    theory layer's ``mechanism`` is a noise kind, so neither counts."""
    holders = {"query": "query", "missingness": "mechanism", "mech": "mechanism"}
    out: dict[str, set[str]] = {"query": set(), "mechanism": set()}
    for path in sorted((root / "audit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            v = node.value
            if isinstance(v, ast.Name):
                holder = v.id
            elif isinstance(v, ast.Attribute) and not (isinstance(v.value, ast.Name)
                                                       and v.value.id == "cfg"):
                holder = v.attr
            else:
                continue
            if holder in holders:
                out[holders[holder]].add(node.attr)
    return out


def test_every_member_the_code_reads_is_in_the_protocol():
    read = _read_members(ROOT)
    assert {"separable_values", "candidate_records", "fwl_constants"} <= read["query"]
    assert {"mask_structure", "pair_candidates", "missing_class"} <= read["mechanism"]
    assert read["query"] <= set(protocol_members(Query))
    assert read["mechanism"] <= set(protocol_members(MissingnessMechanism))


def test_the_scan_sees_a_member_outside_the_protocol(tmp_path):
    (tmp_path / "audit").mkdir()
    (tmp_path / "audit" / "x.py").write_text("def f(mech, cfg):\n    return mech.pivot, "
                                             "cfg.missingness.kind\n")
    assert _read_members(tmp_path)["mechanism"] == {"pivot"}


# ------------------------------------------------------------ a user's own mechanisms
@dataclass(frozen=True)
class UserIid(IndependentFeatures):
    """Every feature missing with probability ``rate``: MCARIid written from the base."""

    rate: float = 0.3
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

    def _rates(self, x):
        return np.full(x.shape, self.rate)

    def p_star(self, d):
        return 1.0 - self.rate**d

    def rho(self, d):
        return 1.0


@dataclass(frozen=True)
class UserPivot(IndependentFeatures):
    """MARPivot (pivot 0) written from the base, with its own pair candidates."""

    threshold: float = 0.0
    rate_low: float = 0.2
    rate_high: float = 0.6
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MAR

    def _rates(self, x):
        q = np.where(x[:, :1] < self.threshold, self.rate_low, self.rate_high)
        q = np.repeat(q, x.shape[1], axis=1)
        q[:, 0] = 0.0
        return q

    def p_star(self, d):
        return 1.0

    def rho(self, d):
        return 1.0

    def _pair_candidates(self, x, bound):
        out = []
        for v in (min(max(self.threshold, -bound), bound), -bound, bound):
            moved = x.copy()
            moved[:, 0] = v
            out.append(moved)
        return np.vstack(out)


@dataclass(frozen=True)
class UserPivotNoCandidates(UserPivot):
    """The same mask law, answering no pair candidates (the base class's answer)."""

    _pair_candidates = Mechanism._pair_candidates


@dataclass(frozen=True)
class UserRow(Mechanism):
    """The whole record missing with probability 1 − ``p``: MCARRow from the base."""

    p: float = 0.5
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

    def p_star(self, d):
        return self.p

    def rho(self, d):
        return 1.0

    def mask_distribution(self, record):
        d = np.asarray(record).shape[0]
        return np.array([np.zeros(d, bool), np.ones(d, bool)]), np.array([self.p, 1 - self.p])

    def sample_masks(self, records, rng=None):
        x = np.asarray(records)
        g = np.random.default_rng(rng)
        return np.repeat(g.random((x.shape[0], 1)) >= self.p, x.shape[1], axis=1)


def _same_pair(a, b) -> None:
    np.testing.assert_array_equal(a.z, b.z)
    np.testing.assert_array_equal(a.z_prime, b.z_prime)
    assert a.score == b.score


def _pair(qname, mech, noise="laplace"):
    q = make_query(qname, **QPARAMS.get(qname, {}))
    return worst_case_pair(q, mech, D, N, B, Release(noise, 0.8), pilot_trials=500, seed=3)


@pytest.mark.parametrize(("user", "builtin"), [
    (UserIid(0.3), MCARIid(0.3)),
    (UserPivot(0.3, 0.1, 0.8), MARPivot(0, 0.3, 0.1, 0.8)),
    (UserRow(0.4), MCARRow(0.4)),
], ids=["independent", "pivot", "row"])
@pytest.mark.parametrize("qname", ["sum", "vector-sum", "histogram"])
def test_a_user_mechanism_finds_the_builtin_pair(user, builtin, qname):
    assert isinstance(user, MissingnessMechanism)
    _check_members(user, MissingnessMechanism)
    assert (user.p_star(D), user.rho(D)) == (builtin.p_star(D), builtin.rho(D))
    _same_pair(_pair(qname, user), _pair(qname, builtin))


def test_a_user_mechanism_mask_structure_and_general_path():
    np.testing.assert_array_equal(UserIid(0.3).mask_structure(np.ones(4)).rates, [0.3] * 4)
    assert UserRow().mask_structure(np.ones(4)) is None
    out = simulate_general(np.ones((3, 2)), make_query("sum"), UserRow(0.5),
                           Release("gaussian", 1e-9), 500, 1)
    assert set(np.round(out).astype(int)) <= {0, 2, 4, 6}


def test_the_search_uses_the_user_pair_candidates():
    with_candidates = _pair("histogram", UserPivot())
    without = _pair("histogram", UserPivotNoCandidates())
    assert without.score < with_candidates.score
    assert UserPivotNoCandidates().pair_candidates(np.ones((2, D)), B).shape == (0, D)


def test_a_user_class_by_itself_or_by_its_import_target():
    assert UserIid.kind == "tests.test_protocols:UserIid"  # default kind: the target
    assert make_missingness(UserIid, rate=0.2) == UserIid(0.2)
    built = make_missingness("tests.test_protocols:UserIid", r=0.2)
    assert built == UserIid(0.2)
    assert make_missingness(built.kind, **built.params()) == built
    with pytest.raises(ValueError, match="unknown parameter 'p' for missingness kind"):
        make_missingness(UserIid, p=0.2)
    with pytest.raises(ValueError, match="has no attribute"):
        make_missingness("tests.test_protocols:Nothing")
    with pytest.raises(ValueError, match="dataclass mechanism class"):
        make_missingness("tests.test_protocols:_pair")


def test_the_audit_plan_takes_a_user_mechanism_by_its_target():
    from audit.pipeline.plan import plan_audit
    from tests.conftest import audit_config

    def plan(missingness):
        return plan_audit(audit_config(missingness=missingness, **{"scenario.d": D}))

    user = plan({"kind": "tests.test_protocols:UserIid", "rate": 0.3})
    builtin = plan({"kind": "mcar-iid", "rate": 0.3})
    assert user.config.to_dict()["missingness"] == {"kind": "tests.test_protocols:UserIid",
                                                 "rate": 0.3}
    assert (user.p_star, user.rho, user.missing_class) == (builtin.p_star, builtin.rho,
                                                           builtin.missing_class)
    assert user.eps_pair == builtin.eps_pair and user.eps_theory == builtin.eps_theory


def test_a_mechanism_without_a_required_method_fails_early():
    @dataclass(frozen=True)
    class NoRho(IndependentFeatures):
        missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

        def _rates(self, x):
            return np.zeros(x.shape)

        def p_star(self, d):
            return 1.0

    with pytest.raises(TypeError, match="abstract method.*rho"):
        NoRho()


def test_an_object_missing_a_protocol_member_is_refused_by_name():
    class DuckTyped:  # the pre-protocol duck type: no mask_structure, no pair_candidates
        kind, missing_class = "duck", MissingnessClass.MCAR
        check_dimension = MCARIid().check_dimension
        p_star, rho = MCARIid().p_star, MCARIid().rho
        mask_distribution = MCARIid().mask_distribution
        sample_masks, params = MCARIid().sample_masks, MCARIid().params

    assert missing_members(DuckTyped(), MissingnessMechanism) == ["mask_structure",
                                                                  "pair_candidates"]
    with pytest.raises(ValueError, match="missingness must be an audit.protocols.Missingness"
                                         "Mechanism.*lacks mask_structure, pair_candidates"):
        worst_case_pair(make_query("sum"), DuckTyped(), D, N, B, Release("laplace", 1.0))
    with pytest.raises(ValueError, match="query must be an audit.protocols.Query"):
        worst_case_pair(object(), MCARIid(), D, N, B, Release("laplace", 1.0))
    with pytest.raises(ValueError, match="protocol must be a typing.Protocol"):
        protocol_members(MCARIid)


def test_the_private_names_are_aliases():
    assert _Mechanism is Mechanism and _IndependentFeatures is IndependentFeatures
    assert issubclass(MCARIid, IndependentFeatures) and issubclass(MCARRow, Mechanism)
