"""The PLD builders of audit.theory.pld: masses, rounding direction, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.mixture import Mixture
from audit.theory import pld
from audit.theory.pair import pair_epsilon
from audit.theory.tradeoff import LaplaceTradeoff, amplify_tradeoff, delta_for_epsilon


@pytest.mark.parametrize("base", [pld.gaussian_loss(0.7), pld.laplace_loss(0.9),
                                  pld.pure_dp_loss(1.1)])
@pytest.mark.parametrize("p", [0.2, 1.0])
def test_subsampled_pmf_is_a_probability_and_dominates_the_profile(base, p):
    pmf = pld.subsampled_pmf(base, p, 1e-3)
    assert pmf._probs.min() >= 0.0  # noqa: SLF001 (dp_accounting keeps them private)
    assert pmf._probs.sum() + pmf._infinity_mass == pytest.approx(1.0, abs=1e-12)  # noqa: SLF001
    # E_ω[e^{−L}] ≤ 1 for a (rounded-up) PLD
    losses = (np.arange(pmf.size) + pmf._lower_loss) * 1e-3  # noqa: SLF001
    assert float(np.sum(pmf._probs * np.exp(-losses))) <= 1.0 + 1e-12  # noqa: SLF001


def test_subsampled_laplace_profile_bracketed():
    p, mu = 0.3, 0.9
    curve = amplify_tradeoff(LaplaceTradeoff(mu), p)
    pmf = pld.subsampled_pmf(pld.laplace_loss(mu), p, 1e-4)
    for eps in (0.0, 0.05, 0.2):
        exact = delta_for_epsilon(curve, eps)
        got = float(pmf.get_delta_for_epsilon(eps))
        assert exact - 1e-12 <= got <= exact + 2e-4


def test_pair_pmfs_bracket_the_exact_pair():
    P = Mixture([0.3, 0.7], [1.0, -0.5], "laplace", 1.0)
    Q = Mixture([0.6, 0.4], [0.0, 0.5], "laplace", 1.0)
    exact = pair_epsilon(P, Q, 1e-3).value
    hi = pld.compose_epsilon(pld.pair_pmfs(P, Q, 1e-4), 1, 1e-3)
    lo = pld.compose_epsilon(pld.pair_pmfs(P, Q, 1e-4, pessimistic=False), 1, 1e-3)
    assert lo - 1e-12 <= exact <= hi + 1e-12
    assert hi - lo < 1e-3


def test_bad_input():
    with pytest.raises(ValueError, match="p must be in"):
        pld.subsampled_pmf(pld.gaussian_loss(1.0), 0.0, 1e-3)
    with pytest.raises(ValueError, match="discretization must"):
        pld.subsampled_pmf(pld.gaussian_loss(1.0), 0.5, 1e-9)
    with pytest.raises(ValueError, match="mu must be"):
        pld.gaussian_loss(-1.0)
    with pytest.raises(ValueError, match="releases must be"):
        pld.compose_epsilon(pld.subsampled_pmf(pld.pure_dp_loss(1.0), 0.5, 1e-3), 0, 1e-5)
    # dp_accounting moves the truncated tails (1e-15) to the infinite loss: after a
    # composition no finite ε holds at δ = 0 (the callers use closed forms there)
    one = pld.subsampled_pmf(pld.pure_dp_loss(1.0), 0.5, 1e-3)
    assert math.isfinite(pld.compose_epsilon(one, 1, 0.0))
    assert pld.compose_epsilon(one, 3, 0.0) == math.inf


def test_the_loss_step_grows_with_the_loss_beyond_ten():
    assert pld.loss_step(1e-4, 10.0) == 1e-4
    assert pld.loss_step(1e-4, 700.0) == pytest.approx(7e-3)
    assert pld.loss_step(1e-3, 700.0) == pytest.approx(7e-3)
    assert pld.loss_step(1e-2, 700.0) == 1e-2


@pytest.mark.parametrize("mu,k", [(40.0, 1), (12.0, 10)])
def test_epsilon_for_delta_brackets_a_loss_beyond_the_exponents_range(mu, k):
    """The Gaussian mechanism at μ = 40 (or μ = 12 over 10 releases, √10·12 ≈ 38): its loss
    reaches 800, where dp_accounting's own ε search sums mass·e^{−loss} and underflows (it
    answers with an ε that can be too large for the optimistic PLD). Solved on the scalar
    δ(ε), the optimistic and pessimistic PLDs bracket the closed form."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    from audit.theory.profiles import gaussian_epsilon

    exact = gaussian_epsilon(1e-5, mu * math.sqrt(k))
    assert exact > 700
    low, high = (pld.compose_epsilon(
        dpl.from_gaussian_mechanism(1.0 / mu, pessimistic_estimate=up,
                                    value_discretization_interval=1e-2), k, 1e-5)
        for up in (False, True))
    assert low <= exact <= high
    assert high - low <= 2 * k * 1e-2 + 1e-6


def test_epsilon_for_delta_refuses_a_delta_outside_the_unit_interval():
    from dp_accounting.pld import privacy_loss_distribution as dpl

    with pytest.raises(ValueError, match="delta"):
        pld.epsilon_for_delta(dpl.from_gaussian_mechanism(1.0), 1.5)
