import math

import numpy as np
import pytest

from audit.model.missingness import (
    MISSINGNESS_KINDS,
    MissingnessClass,
    is_mar_by_enumeration,
    make_missingness,
)

D = 4
CASES = {
    "mcar-iid": ({"rate": 0.3}, 1 - 0.3**D, 1.0, MissingnessClass.MCAR),
    "mcar-fixed": ({"observed": 2, "p_star": 0.6}, 0.6, 2 / D, MissingnessClass.MCAR),
    "mcar-row": ({"p_star": 0.25}, 0.25, 1.0, MissingnessClass.MCAR),
    "mar-pivot": ({"pivot": 1, "rate_low": 0.2, "rate_high": 0.9}, 1.0, 1.0,
                  MissingnessClass.MAR),
    "mar-monotone": ({"q0": 0.15, "intercept": -0.5, "slope": 2.0}, 0.85, 1.0,
                     MissingnessClass.MAR),
    "never-mask": ({"j0": 2, "rate": 0.5}, 1.0, 1.0, MissingnessClass.MAR),
    "mnar-value": ({"rate_low": 0.1, "rate_high": 0.7}, 1 - 0.1**D, 1.0, MissingnessClass.MNAR),
}
RECORD = np.array([0.7, -0.4, 1.0, -1.0])


def test_every_kind_has_a_case():
    assert set(CASES) == set(MISSINGNESS_KINDS)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_p_star_rho_class(kind):
    params, p_star, rho, cls = CASES[kind]
    m = make_missingness(kind, **params)
    assert m.missing_class is cls
    assert math.isclose(m.p_star(D), p_star, rel_tol=1e-12)
    assert math.isclose(m.rho(D), rho, rel_tol=1e-12)
    if cls is not MissingnessClass.MNAR:
        # p* = 1 − P[all missing] read off the enumeration, for several records.
        for z in (RECORD, -RECORD, np.zeros(D)):
            masks, probs = m.mask_distribution(z)
            full = probs[masks.all(axis=1)].sum()
            assert math.isclose(1 - full, p_star, abs_tol=1e-12)
            assert masks.shape[1] == D and math.isclose(probs.sum(), 1.0, abs_tol=1e-12)
            # ρ is an almost-sure bound on the observed fraction.
            assert (~masks).sum(axis=1).max() / D <= rho + 1e-12


def test_rho_edge_cases():
    assert make_missingness("mcar-iid", rate=1.0).rho(5) == 0.0
    assert make_missingness("never-mask", rate=1.0).rho(5) == 0.2
    assert make_missingness("mcar-fixed", k=3, p_star=0.5).rho(6) == 0.5


@pytest.mark.statistical
@pytest.mark.parametrize("kind", sorted(CASES))
def test_sampling_matches_enumeration(kind):
    """Mask frequencies of sample_masks vs the exact law: every pattern within 5 standard
    errors (7 kinds × ≤ 16 patterns; P[some |Z| > 5] < 112 · 5.7e-7 ≈ 6e-5)."""
    params = CASES[kind][0]
    m = make_missingness(kind, **params)
    n = 40_000
    masks = m.sample_masks(np.tile(RECORD, (n, 1)), np.random.default_rng(11))
    codes = masks.astype(np.int64) @ (1 << np.arange(D))
    freq = np.bincount(codes, minlength=1 << D) / n
    exact = np.zeros(1 << D)
    em, ep = m.mask_distribution(RECORD)
    exact[em.astype(np.int64) @ (1 << np.arange(D))] = ep
    se = np.sqrt(exact * (1 - exact) / n) + 1e-12
    assert np.all(np.abs(freq - exact) <= 5 * se + 1e-12)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_mar_by_enumeration(kind):
    params, _, _, cls = CASES[kind]
    m = make_missingness(kind, **params)
    ok = is_mar_by_enumeration(m, 3 if kind != "mar-pivot" else 3, [-1.0, 0.5, 1.0])
    assert ok is (cls is not MissingnessClass.MNAR)


def test_nan_record_reads_as_zero():
    m = make_missingness("mnar-value", threshold=-0.5)
    a = m.mask_distribution([np.nan, 0.0])
    b = m.mask_distribution([0.0, 0.0])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_allclose(a[1], b[1])


def test_factory_errors():
    with pytest.raises(ValueError, match="kind must be one of"):
        make_missingness("mcar")
    with pytest.raises(ValueError, match="unknown parameter 'rat'"):
        make_missingness("mcar-iid", rat=0.2)
    with pytest.raises(ValueError, match=r"rate must be in \[0.0, 1.0\], got rate=1.5"):
        make_missingness("mcar-iid", rate=1.5)
    with pytest.raises(ValueError, match="pivot must be in"):
        make_missingness("mar-pivot", pivot=5).p_star(3)
    with pytest.raises(ValueError, match="observed must be in"):
        make_missingness("mcar-fixed", observed=5).mask_distribution(np.zeros(3))
    with pytest.raises(ValueError, match="record length d must be in"):
        make_missingness("mcar-iid").mask_distribution(np.zeros(21))


def test_every_mechanism_satisfies_the_protocol():
    from audit.protocols import MissingnessMechanism

    for kind in MISSINGNESS_KINDS:
        assert isinstance(make_missingness(kind), MissingnessMechanism), kind
