"""to_substitution: the one conversion of a library's relation and budget, against the values
each adapter computed inline before it existed (bit for bit), group privacy, and its use by
every adapter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.adapters import (
    LibraryDefect,
    Relation,
    adapters,
    examples,
    make_implementation,
    to_substitution,
)
from audit.adapters import relations as relations_module

EPSILONS = [1.0, 0.1, 0.37, 1 / 3, 2.9, 7.0, 1e-3, 12.5]
DELTAS = [0.0, 1e-6, 3e-7, 0.3, 1e-12]


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", [1, 2, 3, 5, 7, 40])
def test_entry_substitution_is_diffprivlibs_epsilon_over_d(epsilon, d):
    # the diffprivlib adapter called the library with ``epsilon / x.shape[1]``
    b = to_substitution(Relation.ENTRY_SUBSTITUTION, epsilon, 0.0, entries=d)
    assert b.epsilon == epsilon / d and b.delta == 0.0 and b.distance == 1


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_add_remove_is_pipelinedps_half_budget(epsilon, delta):
    # the PipelineDP adapter: ``eps_lib = epsilon / 2.0``, ``delta / (1.0 + math.exp(eps_lib))``
    eps_lib = epsilon / 2.0
    b = to_substitution("add-remove", epsilon, delta)
    assert (b.epsilon, b.delta, b.distance) == (eps_lib, delta / (1.0 + math.exp(eps_lib)), 1)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("k", [1, 3, 8])
def test_symmetric_distance_is_opendps_d_in(epsilon, delta, k):
    # the OpenDP adapter: the budget as asked, the map evaluated at d_in = 2k
    b = to_substitution(Relation.SYMMETRIC_DISTANCE, epsilon, delta, entries=k)
    assert (b.epsilon, b.delta, b.distance) == (epsilon, delta, 2 * k)


@pytest.mark.parametrize(("relation", "entries", "steps"), [
    ("substitution", 4, 1), ("entry-substitution", 4, 4), ("add-remove", 4, 2),
    ("entry-add-remove", 4, 8), ("entry-add-remove", 1, 2),
])
@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.2, 0.01), (3.0, 1e-9)])
def test_group_privacy_gives_back_the_substitution_budget(relation, entries, steps, epsilon,
                                                          delta):
    """g steps of (ε', δ') compose to (gε', δ'·(e^{gε'} − 1)/(e^{ε'} − 1)), the closed form of
    Σ_{i<g} e^{iε'}: that must be the (ε, δ) asked for."""
    b = to_substitution(relation, epsilon, delta, entries=entries)
    assert b.distance == 1
    assert steps * b.epsilon == pytest.approx(epsilon, rel=1e-15)
    back = b.delta * math.expm1(steps * b.epsilon) / math.expm1(b.epsilon)
    assert back == pytest.approx(delta, rel=1e-12)


def test_substitution_is_the_identity():
    assert to_substitution("substitution", 0.7, 1e-5, entries=9) == \
        relations_module.LibraryBudget(0.7, 1e-5, 1)


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"relation": "replace-one"}, "relation must be one of 'substitution'"),
    ({"epsilon": 0.0}, "epsilon must be in (0.0, inf), got epsilon=0.0"),
    ({"epsilon": math.inf}, "epsilon"),
    ({"epsilon": math.nan}, "epsilon"),
    ({"delta": 1.0}, "delta must be in [0, 1), got delta=1.0"),
    ({"delta": -1e-9}, "delta"),
    ({"entries": 0}, "entries must be an integer >= 1, got entries=0"),
    ({"entries": 2.0}, "entries must be an integer"),
    ({"entries": True}, "entries must be an integer"),
])
def test_bad_inputs_are_named(kwargs, needle):
    args = {"relation": "add-remove", "epsilon": 1.0, "delta": 0.0, "entries": 1, **kwargs}
    with pytest.raises(ValueError) as info:
        to_substitution(args.pop("relation"), args.pop("epsilon"), args.pop("delta"), **args)
    assert needle in str(info.value), str(info.value)


def test_every_adapter_converts_through_to_substitution(monkeypatch):
    """Each library adapter asks to_substitution, with the relation its ADAPTER declares, for
    the budget it hands its library (a spy on the function, every example built and called;
    an isolated library's example stopped where its environment would be built)."""
    from audit.adapters.isolation import environments

    seen: dict[str, set] = {}
    real = relations_module.to_substitution

    class Stop(Exception):
        pass

    def spy(relation, epsilon, delta=0.0, *, entries=1):
        seen.setdefault(current, set()).add(Relation.parse(relation))
        return real(relation, epsilon, delta, entries=entries)

    def no_build(environment):
        raise Stop

    monkeypatch.setattr(relations_module, "to_substitution", spy)
    monkeypatch.setattr(environments, "ensure", no_build)
    x = np.random.default_rng(0).uniform(-1, 1, (10, 3))
    for target, ex in examples():
        library = target.partition(":")[0]
        if not adapters()[library].isolated:
            pytest.importorskip(adapters()[library].import_name)
        current = library
        try:
            impl = make_implementation(target, epsilon=ex.epsilon, delta=ex.delta,
                                       params=ex.kwargs())
        except Stop:
            continue
        try:
            impl(x, np.random.default_rng(1))
        except LibraryDefect:  # a declared defect (Target.defect): its budget was asked at make
            continue
    assert seen == {name: {a.relation} for name, a in adapters().items()}
