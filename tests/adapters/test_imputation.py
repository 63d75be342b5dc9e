"""The imputation targets (audit.adapters.imputation): parameters refused with their name, the
filled sum that the seeded noise is added to (checked against docs/THEORY.md §11), the cache
of deterministic imputers, and the random imputers' draws."""

from __future__ import annotations

import numpy as np
import pytest

from audit.adapters import imputation as imp
from audit.adapters import make_implementation
from audit.model.imputation_pairs import imputation_pair
from audit.theory import imputation as th

B = [-1.0, 1.0]


def _impl(function, **params):
    return make_implementation(f"imputation:{function}", epsilon=1.0,
                               params={"bounds": B, **params})


@pytest.mark.parametrize("function,params,message", [
    ("mean", {"bounds": (1, -1)}, "parameter 'bounds'"),
    ("mean", {"bounds": B, "column": -1}, "parameter 'column' must be an integer >= 0"),
    ("mean", {"bounds": B, "release": "spark"}, "parameter 'release'"),
    ("mean", {"bounds": B, "statistic": "median"}, "parameter 'statistic'"),
    ("knn", {"bounds": B, "n_neighbors": 0}, "parameter 'n_neighbors'"),
    ("iterative", {"bounds": B, "max_iter": 1.5}, "parameter 'max_iter'"),
    ("private_mean", {"bounds": B, "impute_share": 1.0}, r"parameter 'impute_share' must be "
                                                          r"in \(0, 1\)"),
    ("private_mean", {"bounds": B, "count": "exact"}, "parameter 'count'"),
    ("mean", {"bounds": B, "n_neighbors": 3}, "unknown parameter 'n_neighbors'"),
    ("mean", {}, "parameter 'bounds' is required"),
])
def test_bad_parameters_name_themselves(function, params, message):
    with pytest.raises(ValueError, match=message):
        make_implementation(f"imputation:{function}", epsilon=1.0, params=params)


def test_delta_must_be_zero_and_the_column_must_exist():
    with pytest.raises(ValueError, match="delta must be 0"):
        make_implementation("imputation:mean", epsilon=1.0, delta=1e-6, params={"bounds": B})
    with pytest.raises(ValueError, match="delta must be 0"):
        make_implementation("imputation:mean", epsilon=1.0, delta=1e-6,
                            params={"bounds": B, "release": "diffprivlib"})
    with pytest.raises(ValueError, match=r"release 'gaussian' needs delta in \(0, 1\)"):
        make_implementation("imputation:mean", epsilon=1.0, params={"bounds": B,
                                                                     "release": "gaussian"})
    with pytest.raises(ValueError, match=r"parameter 'column' must be in \[0, 1\]"):
        _impl("mean", column=2)(np.zeros((3, 2)), np.random.default_rng(0))


@pytest.mark.parametrize("function,others", [("mean", "zero"), ("median", "split"),
                                             ("most_frequent", "split"), ("knn", "zero")])
@pytest.mark.parametrize("m", [1, 4, 16])
def test_the_seeded_releases_differ_by_the_theory_shift(function, others, m):
    """The same seed draws the same noise on both sides: the releases differ by exactly the
    filled sums' difference, which docs/THEORY.md §11 states (ε × the scale W/ε = 2)."""
    z, zp = imputation_pair(20, m, others=others)
    impl = _impl(function)
    a = impl(z, np.random.default_rng(7))
    b = impl(zp, np.random.default_rng(7))
    assert a - b == pytest.approx(2.0 * th.pair_epsilon(function, 20, m, 2.0, 1.0), abs=1e-9)


def test_the_cache_keeps_at_most_its_size_and_gives_the_same_releases(monkeypatch):
    calls = []
    real = imp._sklearn_column

    def counted(imputer, x, *args):
        calls.append(x.tobytes())
        return real(imputer, x, *args)

    monkeypatch.setattr(imp, "_sklearn_column", counted)
    monkeypatch.setattr(imp, "CACHE_SIZE", 2)
    impl = _impl("iterative")
    rng = np.random.default_rng(3)
    t = [np.where(rng.random((6, 2)) < 0.3, np.nan, rng.uniform(-1, 1, (6, 2))) for _ in range(3)]
    first = [impl(x, np.random.default_rng(i)) for i, x in enumerate(t)]
    assert len(calls) == 3
    assert impl(t[2], np.random.default_rng(2)) == first[2] and len(calls) == 3  # kept
    assert impl(t[0], np.random.default_rng(0)) == first[0] and len(calls) == 4  # evicted
    batch = impl.batch(np.stack(t), np.random.default_rng(0))
    assert batch.shape == (3,) and np.isfinite(batch).all()


def test_hot_deck_draws_donors_among_the_observed_values_uniformly():
    col = np.array([[0.25, np.nan, -0.75, np.nan, 1.0]])
    rng = np.random.default_rng(11)
    filled = imp._hot_deck_columns(np.repeat(col, 30_000, axis=0), -1.0, 1.0, rng)
    drawn = filled[:, [1, 3]].ravel()
    assert set(np.unique(drawn)) == {0.25, -0.75, 1.0}
    # each donor 1/3: binomial standard error 0.0019, 6 of them
    for v in (0.25, -0.75, 1.0):
        assert abs(np.mean(drawn == v) - 1 / 3) < 6 * np.sqrt(2 / 9 / drawn.size)
    np.testing.assert_array_equal(filled[:, [0, 2, 4]], np.repeat(col[:, [0, 2, 4]], 30_000, 0))


def test_the_private_imputer_clips_its_mean_and_fills_an_empty_column():
    rng = np.random.default_rng(5)
    cols = np.array([[1.0, np.nan, np.nan], [np.nan, np.nan, np.nan]])
    out = imp._private_mean_columns(np.repeat(cols, 500, axis=0), -1.0, 1.0, 0.01, "noisy", rng)
    assert np.isfinite(out).all() and (np.abs(out) <= 1.0).all()
    public = imp._private_mean_columns(cols, -1.0, 1.0, 1.0, "public", rng)
    assert np.isfinite(public).all()
    # the public-count mean is unclipped: its noise can leave the bounds
    wide = imp._private_mean_columns(np.repeat(cols[:1], 2000, 0), -1.0, 1.0, 0.1, "public",
                                     rng)
    assert (np.abs(wide[:, 1]) > 1.0).any()


def test_the_release_can_be_diffprivlib_sum():
    pytest.importorskip("diffprivlib")
    impl = _impl("mean", release="diffprivlib")
    z, zp = imputation_pair(20, 16)
    a = np.mean([impl(z, np.random.default_rng(i)) for i in range(400)])
    b = np.mean([impl(zp, np.random.default_rng(i)) for i in range(400)])
    # the filled sums differ by 10; diffprivlib's noise (scale 2) is seeded alike on both
    # sides but truncated at ±20, so the mean difference is close to 10, not equal
    assert 9.0 < a - b < 10.5
    assert impl.batch is None


def test_the_private_imputer_can_take_diffprivlibs_mean():
    pytest.importorskip("diffprivlib")
    rng = np.random.default_rng(2)
    cols = np.array([[0.5, np.nan, 1.0, np.nan], [np.nan] * 4])
    out = imp._private_mean_columns(np.repeat(cols, 50, axis=0), -1.0, 1.0, 0.05,
                                    "diffprivlib", rng)
    assert (np.abs(out) <= 1.0).all()  # LaplaceTruncated keeps the mean in the bounds
    assert np.all(out[50:] == 0.0)  # nothing observed: the middle of the bounds
    np.testing.assert_array_equal(out[:50, [0, 2]], np.repeat(cols[:1, [0, 2]], 50, 0))
    sharp = imp._private_mean_columns(np.repeat(cols[:1], 200, axis=0), -1.0, 1.0, 5.0,
                                      "diffprivlib", rng)
    assert len(np.unique(sharp[:, 1])) > 150  # a fresh draw per table
    # the observed mean 0.75 plus Laplace noise of scale b = 1/5 clamped to [-1, 1]: expected
    # 0.75 - (b/2)·e^(-0.25/b) (the mass above 1 moved to 1); the mean of 200 draws has
    # standard error < 0.02, and 0.1 is 5 of them (failure < 1e-6)
    expected = 0.75 - 0.1 * np.exp(-1.25)
    assert abs(np.mean(sharp[:, 1]) - expected) < 0.1


@pytest.mark.parametrize("release,delta", [("laplace", 0.0), ("gaussian", 1e-5)])
@pytest.mark.parametrize("statistic,divisor", [("sum", 1.0), ("mean", 20.0)])
def test_the_projects_releases_differ_by_the_shift_over_the_divisor(release, delta,
                                                                     statistic, divisor):
    """Seeded alike, the two sides' releases differ by the filled sums' difference (10 for
    mean imputation at m = 16 of 20), divided by n for the mean; the Gaussian σ is the
    analytic one for sensitivity 2 (the noise of one call, on a table without NA)."""
    from audit.noise import GaussianNoise

    z, zp = imputation_pair(20, 16)
    impl = make_implementation("imputation:mean", epsilon=1.0, delta=delta,
                               params={"bounds": B, "release": release,
                                       "statistic": statistic})
    a, b = (impl(x, np.random.default_rng(3)) for x in (z, zp))
    assert a - b == pytest.approx(10.0 / divisor, abs=1e-9)
    assert impl.claim.epsilon == 1.0 and impl.claim.delta == delta
    flat = np.zeros((20, 2))
    got = impl.batch(np.repeat(flat[None], 4, 0), np.random.default_rng(5)) * divisor
    rng = np.random.default_rng(5)
    want = (rng.laplace(0.0, 2.0, 4) if release == "laplace"
            else rng.normal(0.0, GaussianNoise().calibrate(2.0, 1.0, delta, "analytic"), 4))
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("statistic,shift", [("sum", 10.0), ("mean", 0.5)])
def test_the_release_can_be_opendps_and_is_not_seeded(statistic, shift):
    """OpenDP's sum or mean of the imputed column: its own noise (two calls with one seed
    differ; the adapter says the release is unseeded), centred on the filled statistic: the
    mean of 300 differences has standard error < 0.25·scale (scale 2 or 0.1, OpenDP's
    rounding allowance aside), and 1.5·scale is 6 of them (failure < 1e-8)."""
    pytest.importorskip("opendp")
    from audit.adapters import seedable

    z, zp = imputation_pair(20, 16)
    impl = make_implementation("imputation:mean", epsilon=1.0,
                               params={"bounds": B, "release": "opendp",
                                       "statistic": statistic})
    assert impl.batch is None
    assert impl(z, np.random.default_rng(0)) != impl(z, np.random.default_rng(0))
    assert not seedable("imputation:mean", {"release": "opendp"})
    assert seedable("imputation:mean", {"release": "diffprivlib"})
    diffs = [impl(z, None) - impl(zp, None) for _ in range(300)]
    scale = 2.0 / (1.0 if statistic == "sum" else 20.0)
    assert abs(np.mean(diffs) - shift) < 1.5 * scale
    assert 0.8 * scale < np.std(diffs) / np.sqrt(2) / np.sqrt(2) < 1.3 * scale


def test_the_release_can_be_diffprivlibs_mean():
    pytest.importorskip("diffprivlib")
    impl = _impl("mean", release="diffprivlib", statistic="mean")
    z, zp = imputation_pair(20, 16)
    a = np.mean([impl(z, np.random.default_rng(i)) for i in range(400)])
    b = np.mean([impl(zp, np.random.default_rng(i)) for i in range(400)])
    # the filled means differ by 0.5; the noise (scale 0.1) is seeded alike on both sides,
    # truncated at ±1 (rarely reached from ±0.25)
    assert 0.45 < a - b < 0.52
