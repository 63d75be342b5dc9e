"""audit.pipeline.ceilings: typed ceilings, the violations they yield, the lines printed."""

from __future__ import annotations

import pytest

from audit.enums import CeilingKind, Direction
from audit.estimation.sequential import SequentialBound
from audit.pipeline.ceilings import Ceiling, Violation, violations


def _seq(claims, stopped):
    return SequentialBound(0.5, Direction.Z_VS_ZPRIME, 1.0, "sequential betting e-process",
                           0.05, 0.0, 1000, True, tuple(claims), tuple(stopped),
                           tuple(0.0 for _ in claims))


def test_a_ceiling_is_exceeded_beyond_its_error_only():
    c = Ceiling(CeilingKind.PAIR, 0.15, "pair", error=1e-9)
    assert not c.exceeded_by(0.15 + 5e-10) and c.exceeded_by(0.15 + 2e-9)
    assert not Ceiling("eps_theory", None, "MNAR").exceeded_by(10.0)
    assert Ceiling("eps_fdp", 1.0).kind is CeilingKind.FDP
    with pytest.raises(ValueError, match="kind must be one of"):
        Ceiling("eps_magic", 1.0)


def test_violations_in_order_with_the_documented_lines():
    ceilings = (Ceiling(CeilingKind.PAIR, 0.1), Ceiling(CeilingKind.THEORY, 0.2, "RPS 4.5"),
                Ceiling(CeilingKind.FDP, 0.3))
    out = violations(0.25, ceilings, confidence=0.95)
    assert [v.kind for v in out] == [CeilingKind.PAIR, CeilingKind.THEORY]
    assert out[0].describe() == "eps_lower=0.25 > eps_pair=0.1"
    assert out[1].describe() == "eps_lower=0.25 > eps_theory=0.2 (RPS 4.5)"
    assert violations(0.05, ceilings, confidence=0.95) == ()


def test_claims_refuted_by_a_sequential_test_are_violations_of_their_kind():
    ceilings = (Ceiling(CeilingKind.AMPLIFIED_CLAIM, 0.5, "amplified"),
                Ceiling(CeilingKind.CLAIM, 1.0, "claimed by f"))
    bound = _seq([0.5, 1.0], [400, 900])
    out = violations(0.5, ceilings, bound, confidence=0.95)
    assert [(v.kind, v.sequential) for v in out] == [(CeilingKind.CLAIM, True),
                                                     (CeilingKind.AMPLIFIED_CLAIM, True)]
    assert out[0].describe().startswith("the claim epsilon=1 refuted by the sequential test "
                                        "after 1,000 calls per side")
    assert "the amplified claim (eps_theory)" in out[1].describe()
    assert violations(0.5, ceilings, _seq([0.5, 1.0], [-1, -1]), confidence=0.95) == ()


def test_a_claim_exceeded_by_a_fixed_bound_is_refuted():
    v = Violation(CeilingKind.CLAIM, 1.5, 1.0)
    assert v.describe() == ("eps_lower=1.5 > claimed epsilon=1: the implementation's claim is "
                            "refuted")


def test_the_claim_reports_its_batch_check_as_a_typed_record():
    from audit.model.batch_check import TESTS, BatchCheck
    from audit.pipeline.ceilings import ClaimReport

    refused = BatchCheck("lib:sum", {t: 0.0 for t in TESTS}, 1e-6, 400, 400, 1.5)
    claim = ClaimReport(1.0, 0.0, "the adapter's claim", "lib:sum", refused)
    assert claim.batch_check is refused and not claim.batch_check.passed  # read as fields
    assert claim.to_dict()["batch_check"] == refused.to_dict()  # the JSON as before
    assert claim.to_dict()["batch_check"]["failed"] == list(TESTS)
    assert "batch_check" not in ClaimReport(1.0, 0.0, "", "lib:sum").to_dict()
