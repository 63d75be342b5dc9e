"""The accountant's per-noise table: which theorem and which §7 curve bound each noise's release.

The shared layer's noise classes (:mod:`audit.noise`) cannot name theorems (the shared layer
imports no theory), so what the accountant knows per noise is listed here, keyed by the noise
class, and the pipeline asks with the kind instead of branching on it:

- the applicable [RPS] bound: Laplace → Theorem 4.5 (pure, δ' = 0); classically calibrated
  Gaussian with ε ≤ 1 → Theorem 4.7; any other Gaussian → Theorem 3.2;
- the f-DP bound derived in this project (docs/THEORY.md §7): ``fdp_missing_laplace`` or
  ``fdp_missing_gaussian``;
- ε of the base mechanism without missingness at an audited δ: the calibrated ε for a pure
  noise (only the pure claim is made for vector Laplace outputs), the exact Gaussian
  profile's ε(δ) for the Gaussian.

Every bound is looked up on :mod:`audit.theory.accountant` at call time, so a test that
replaces one there reaches this table too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from audit.enums import Calibration, NoiseKind
from audit.noise import AdditiveNoise, GaussianNoise, LaplaceNoise, noise_of
from audit.theory import accountant as acc
from audit.theory.tradeoff import TradeoffFunction

__all__ = ["NoiseTheory", "NOISE_THEORY", "theory_of"]


@dataclass(frozen=True)
class NoiseTheory:
    """What the accountant knows about one noise.

    ``rps_bound(epsilon, delta, calibration, p_star, ratio) -> (name, ε', δ')``: the [RPS]
    theorem that applies to the calibrated release under missingness and its (ε', δ');
    ``fdp_missing(sensitivity_tilde, scale, p_star, scalar_output) -> TradeoffFunction``: the
    §7 curve; ``base_epsilon(epsilon, mu, delta) -> float``: ε at δ of the release without
    missingness (μ = sensitivity/scale); ``base_curve(mu, scalar_output) -> TradeoffFunction``:
    the curve f of one release at shift μ (= C̃/scale) that §7 amplifies and §9 composes.
    """

    rps_bound: Callable[[float, float | None, Calibration, float, float],
                        tuple[str, float, float]]
    fdp_missing: Callable[[float, float, float, bool], TradeoffFunction]
    base_epsilon: Callable[[float, float, float], float]
    base_curve: Callable[[float, bool], TradeoffFunction]


# ------------------------------------------------------------------------------ Laplace
def _laplace_rps(epsilon, delta, calibration, p_star, ratio):
    return "RPS Theorem 4.5", acc.laplace_fwl_bound(epsilon, p_star, ratio), 0.0


def _laplace_fdp(sensitivity_tilde, scale, p_star, scalar_output):
    return acc.fdp_missing_laplace(sensitivity_tilde, scale, p_star, scalar_output=scalar_output)


def _laplace_base(epsilon, mu, delta):
    return epsilon  # b = C_1/ε: (ε, 0)-DP, the claim for every output dimension


def _laplace_curve(mu, scalar_output):
    # §7.2: the Laplace curve is proved for scalar outputs only; vectors get f_(μ, 0)
    return acc.tradeoff_laplace(mu) if scalar_output else acc.tradeoff_dp(mu, 0.0)


# ----------------------------------------------------------------------------- Gaussian
def _gaussian_rps(epsilon, delta, calibration, p_star, ratio):
    if calibration is Calibration.CLASSICAL and epsilon <= 1.0:
        return ("RPS Theorem 4.7", *acc.gaussian_fwl_bound(epsilon, delta, p_star, ratio))
    return ("RPS Theorem 3.2", *acc.amplify(epsilon, delta, p_star))


def _gaussian_fdp(sensitivity_tilde, scale, p_star, scalar_output):
    return acc.fdp_missing_gaussian(sensitivity_tilde, scale, p_star)


def _gaussian_base(epsilon, mu, delta):
    return acc.epsilon_for_delta(acc.tradeoff_gaussian(mu), delta)


def _gaussian_curve(mu, scalar_output):
    return acc.tradeoff_gaussian(mu)


#: the accountant's table, one row per noise class of :mod:`audit.noise`
NOISE_THEORY: dict[type[AdditiveNoise], NoiseTheory] = {
    LaplaceNoise: NoiseTheory(_laplace_rps, _laplace_fdp, _laplace_base, _laplace_curve),
    GaussianNoise: NoiseTheory(_gaussian_rps, _gaussian_fdp, _gaussian_base, _gaussian_curve),
}


def theory_of(noise: NoiseKind | str | AdditiveNoise) -> NoiseTheory:
    """The accountant's row for this noise.

    Raises
    ------
    ValueError
        For an unknown noise, or one without a row.
    """
    law = noise_of(noise)
    row = NOISE_THEORY.get(type(law))
    if row is None:  # pragma: no cover - every noise class of audit.noise is listed
        raise ValueError(f"the accountant has no theorem for noise {law.kind.value!r}")
    return row
