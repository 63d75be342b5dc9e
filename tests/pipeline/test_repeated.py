"""The release-count design (audit.pipeline.repeated): what one release and k releases from
one table change in a plan, without the planners branching on ``[releases]``."""

from __future__ import annotations

import math

import pytest

from audit.enums import MaskRegime, MissingnessClass
from audit.model.implementation import CallableImplementation, Claim
from audit.model.missingness import make_missingness
from audit.model.release import Release
from audit.model.repeated import RepeatedReleases
from audit.pipeline.config import config_from_dict
from audit.pipeline.repeated import KReleases, OneRelease, releases_of
from audit.theory import accountant as acc


def _cfg(noise: str, releases: dict | None) -> object:
    doc = {"scenario": {"noise": noise, "epsilon": 1.0, "query": "sum", "d": 1, "n": 4},
           "missingness": {"kind": "mcar-row", "p_star": 0.2},
           "audit": {"trials": 1000, "seed": 1}}
    if releases is not None:
        doc["releases"] = releases
    return config_from_dict(doc)


def _impl(delta: float = 1e-6):
    return CallableImplementation(lambda data, rng: 0.0, Claim(0.5, delta), "zero")


def test_the_config_names_its_design():
    assert releases_of(_cfg("laplace", None)) == OneRelease("laplace")
    assert releases_of(_cfg("laplace", {"count": 3, "masks": "fresh"})) == KReleases(
        "laplace", 3, MaskRegime.FRESH)


def test_only_gaussian_shared_releases_reduce_to_one_release_at_scale_over_root_k():
    release = Release("gaussian", 2.0)
    assert KReleases("gaussian", 4, MaskRegime.SHARED).law_release(release).scale == 1.0
    for design in (KReleases("gaussian", 4, MaskRegime.FRESH),
                   KReleases("laplace", 4, MaskRegime.SHARED), OneRelease("gaussian")):
        assert design.law_release(release) is release and not design.reduces_to_one
    assert KReleases("laplace", 1, MaskRegime.SHARED).single
    assert not KReleases("laplace", 2, MaskRegime.SHARED).single


def test_single_designs_keep_the_laws_and_the_rps_row():
    P, Q = object(), object()
    for design in (OneRelease("laplace"), KReleases("gaussian", 5, MaskRegime.SHARED)):
        assert design.laws(P, Q) == (P, Q)
    assert OneRelease("laplace").theory(None, 0.2, 0.0, MissingnessClass.MCAR,
                                        ("Theorem 4.5", 0.3)) == ("Theorem 4.5", 0.3, None)


def test_k_releases_state_proposition_9_and_the_per_release_comparison():
    curve = acc.tradeoff_dp(1.0, 0.0)
    name, eps, comp = KReleases("laplace", 3, MaskRegime.SHARED).theory(
        lambda: curve, 0.2, 0.0, MissingnessClass.MCAR, ("unused", None))
    assert name.startswith("Proposition 9.1 (shared masks, k = 3)")
    assert eps == pytest.approx(math.log1p(0.2 * math.expm1(3.0)), rel=1e-6)
    assert comp.value == pytest.approx(3 * math.log1p(0.2 * math.expm1(1.0)), rel=1e-3)
    name, eps, comp = KReleases("laplace", 3, MaskRegime.FRESH).theory(
        lambda: curve, 0.2, 0.0, MissingnessClass.MCAR, ("unused", None))
    assert name.startswith("Proposition 9.2") and comp is None
    assert KReleases("laplace", 3, MaskRegime.FRESH).theory(
        lambda: curve, 0.2, 0.0, MissingnessClass.MNAR, ("x", 1.0)) == (
            "no theorem (MNAR)", None, None)


def test_the_implementation_is_called_k_times_and_fresh_masks_mask_nothing_in_the_sampler():
    mech = make_missingness("mcar-iid", rate=0.3)
    impl, sampler = OneRelease("laplace").implementation(_impl(), mech)
    assert sampler is mech and not isinstance(impl, RepeatedReleases)
    impl, sampler = KReleases("laplace", 3, MaskRegime.SHARED).implementation(_impl(), mech)
    assert isinstance(impl, RepeatedReleases) and impl.count == 3 and sampler is mech
    impl, sampler = KReleases("laplace", 3, MaskRegime.FRESH).implementation(_impl(), mech)
    assert sampler.params()["rate"] == 0.0 and impl.missingness is mech


def test_amplified_claims_and_the_shared_comparison():
    mech = make_missingness("mcar-iid", rate=0.3)
    eps, rule = OneRelease("laplace").amplified(_impl(), 0.7)
    assert eps == pytest.approx(acc.amplify(0.5, 1e-6, 0.7)[0]) and "Theorem 3.2" in rule
    shared = KReleases("laplace", 4, MaskRegime.SHARED)
    impl, _ = shared.implementation(_impl(), mech)
    eps, rule = shared.amplified(impl, 0.7)
    assert eps == pytest.approx(acc.amplify(2.0, 4e-6, 0.7)[0]) and "once" in rule
    # (ε, δ) claims: the amplified (ε', p*δ) composed optimally, at the k-release δ
    comp = shared.comparison(impl, 0.7, MissingnessClass.MCAR)
    eps1, delta1 = acc.amplify(0.5, 1e-6, 0.7)
    assert comp.value == pytest.approx(acc.optimal_composition(eps1, delta1, 4, 4e-6))
    assert comp.value < 4 * eps1 and "optimally" in comp.rule
    pure, _ = shared.implementation(_impl(0.0), mech)  # pure DP: k × the amplified ε
    comp = shared.comparison(pure, 0.7, MissingnessClass.MCAR)
    assert comp.value == pytest.approx(4 * acc.amplify(0.5, 0.0, 0.7)[0])
    assert "not a bound" in comp.note
    fresh = KReleases("laplace", 4, MaskRegime.FRESH)
    impl, _ = fresh.implementation(_impl(), mech)
    assert fresh.comparison(impl, 0.7, MissingnessClass.MCAR) is None
    assert OneRelease("laplace").comparison(impl, 0.7, MissingnessClass.MCAR) is None
