"""Privacy amplification by MAR missing data: the theorems of [RPS] and the f-DP bounds of §7.

- [RPS] Theorem 3.2 (generic amplification by MAR missing data): :func:`amplify`.
- [RPS] Theorem 4.5 (Laplace, FWL ℓ1): :func:`laplace_fwl_bound`; Corollary 4.6:
  :func:`corollary_4_6` (only where its proof holds, ρε ≤ 1).
- [RPS] Theorem 4.7 (Gaussian, FWL ℓ2, classical calibration): :func:`gaussian_fwl_bound`.
- docs/THEORY.md §7, **derived in this project, not in [RPS] or [DRS]**: if A is f-DP
  (f symmetric) and D is MAR, A_D is C_{p*}(f)-DP (the [DRS] subsampling operator with
  p = p*): :func:`fdp_missing`, :func:`fdp_missing_gaussian`, :func:`fdp_missing_laplace`.

ln(1 + p*(e^ε − 1)) is :func:`audit._numeric.log1p_c_expm1`, the one implementation shared with
the subsampling operator of :mod:`audit.theory.tradeoff` (stable for ε → 0 and ε ≫ 709).

p* (docs/THEORY.md §2) is the probability that the differing record is at least partially
observed. It is a property of the missingness mechanism (under MAR the same for both
neighbours); the engine's mechanisms report it. :func:`p_star_mcar_iid` is the i.i.d. MCAR
special case.

No result here holds for MNAR mechanisms: functions taking ``missingness_class`` refuse it.
"""

from __future__ import annotations

import math

from audit._numeric import log1p_c_expm1
from audit._validate import (
    check_bool,
    check_delta,
    check_epsilon,
    check_fraction,
    check_in_range,
    check_positive,
    check_positive_int,
    check_probability,
)
from audit.enums import MissingnessClass, NoiseKind
from audit.theory.fwl import rho_d_is_integer
from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    TradeoffFunction,
    amplify_tradeoff,
)

__all__ = [
    "MissingnessClass",
    "Mechanism",
    "amplify",
    "p_star_mcar_iid",
    "laplace_fwl_bound",
    "corollary_4_6",
    "gaussian_fwl_bound",
    "fdp_missing",
    "fdp_missing_gaussian",
    "fdp_missing_laplace",
]


#: The additive-noise release the FWL bounds are about: the one enum for "laplace | gaussian"
#: (:class:`audit.enums.NoiseKind`). Callers parse it with ``NoiseKind.parse(value,
#: "mechanism")`` so that an error names their parameter.
Mechanism = NoiseKind


def require_mar(missingness_class: MissingnessClass | str) -> None:
    """Parse ``missingness_class`` and refuse MNAR, for which no result here holds."""
    mc = MissingnessClass.parse(missingness_class)
    if mc is MissingnessClass.MNAR:
        raise ValueError(
            "missingness_class must be one of 'mcar', 'mar' (no amplification result holds "
            "for MNAR), got missingness_class='mnar'"
        )


# ----------------------------------------------------------------------------- [RPS] bounds
def amplify(
    eps: float,
    delta: float,
    p_star: float,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> tuple[float, float]:
    """Generic amplification by MAR missing data: (ε, δ) → (ln(1 + p*(e^ε − 1)), p*δ).

    Parameters
    ----------
    eps : float
        ε ≥ 0 of the algorithm A on Z_miss^n.
    delta : float
        δ ∈ [0, 1] of A.
    p_star : float
        p* ∈ [0, 1], probability that the differing record is at least partially observed.
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.

    Returns
    -------
    (float, float)
        (ε', δ') such that A_D is (ε', δ')-DP.

    Raises
    ------
    ValueError
        If a parameter is out of range or the mechanism is MNAR.

    References
    ----------
    [RPS] Theorem 3.2; same family as [DRS] Lemma 4.4 with p = p*.
    """
    e = check_epsilon(eps, "eps")
    d = check_delta(delta)
    p = check_probability(p_star, "p_star")
    require_mar(missingness_class)
    return log1p_c_expm1(e, p), p * d


def p_star_mcar_iid(rate: float, d: int) -> float:
    """p* = 1 − r^d for i.i.d. MCAR masking of each of d features with missing rate r.

    p* is a property of the missingness mechanism (docs/THEORY.md §2); for other mechanisms use the
    value the engine's mechanism reports.

    Parameters
    ----------
    rate : float
        Per-feature missing probability r ∈ [0, 1].
    d : int
        Number of features, ≥ 1.

    References
    ----------
    [RPS] Lemma 3.1 and the i.i.d. MCAR example; docs/THEORY.md §2.
    """
    r = check_probability(rate, "rate")
    dd = check_positive_int(d, "d")
    return float(-math.expm1(dd * math.log(r))) if r > 0 else 1.0


def laplace_fwl_bound(
    epsilon: float,
    p_star: float,
    ratio: float,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> float:
    """Laplace mechanism on an ℓ1-FWL query under missing data: ε0' (pure DP, δ = 0).

    The mechanism adds Laplace noise of scale b = C_1/ε; every mask leaves at most ⌊ρd⌋
    features of a record observed, so the masked sensitivity is C̃₁ = ratio·C_1.

    Parameters
    ----------
    epsilon : float
        ε ≥ 0 of the calibration b = C_1/ε.
    p_star : float
        p* ∈ [0, 1].
    ratio : float
        C̃₁/C_1 ∈ (0, 1] (see :meth:`audit.theory.fwl.FWLConstants.ratio`).
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.

    Returns
    -------
    float
        ε0' = ln(1 + p*(e^{ratio·ε} − 1)); A_D^L is (ε0', 0)-DP.

    References
    ----------
    [RPS] Theorem 4.5.
    """
    e = check_epsilon(epsilon)
    p = check_probability(p_star, "p_star")
    r = check_fraction(ratio, "ratio")
    require_mar(missingness_class)
    return log1p_c_expm1(r * e, p)


def corollary_4_6(
    epsilon: float,
    p_star: float,
    rho: float,
    d: int | None = None,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> float:
    """Closed-form upper bound min((e − 1)p*, 1)·ρε on the ε0' of Theorem 4.5.

    Hypotheses: all L_j equal and ρd an integer (so C̃₁/C_1 = ρ), and ρε ≤ 1 — the proof uses
    e^x − 1 ≤ (e − 1)x, true only for 0 ≤ x ≤ 1 (docs/THEORY.md §5). Outside that domain the
    formula is not a bound, so this function refuses it.

    Parameters
    ----------
    epsilon : float
        ε ≥ 0 with ρε ≤ 1.
    p_star : float
        p* ∈ [0, 1].
    rho : float
        ρ ∈ (0, 1].
    d : int, optional
        Number of features; when given, ρd must be an integer (within 1e-9).
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.

    Raises
    ------
    ValueError
        If a parameter is out of range, ρε > 1, or ρd is not an integer.

    References
    ----------
    [RPS] Corollary 4.6; docs/THEORY.md §5.
    """
    e = check_epsilon(epsilon)
    p = check_probability(p_star, "p_star")
    r = check_fraction(rho, "rho")
    require_mar(missingness_class)
    if r * e > 1.0:
        raise ValueError(
            "rho*epsilon must be in [0, 1] for Corollary 4.6 (its proof uses e^x - 1 <= (e - 1)x,"
            f" valid only for x <= 1), got rho*epsilon={r * e!r} (rho={rho!r}, epsilon={epsilon!r})"
        )
    if d is not None:
        dd = check_positive_int(d, "d")
        if not rho_d_is_integer(r, dd):
            raise ValueError(
                f"rho*d must be an integer for Corollary 4.6, got rho*d={r * dd!r} "
                f"(rho={rho!r}, d={d!r})"
            )
    return min((math.e - 1.0) * p, 1.0) * r * e


def gaussian_fwl_bound(
    epsilon: float,
    delta: float,
    p_star: float,
    ratio: float,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> tuple[float, float]:
    """Gaussian mechanism (classical σ = C_2 √(2 ln(1.25/δ))/ε) on an ℓ2-FWL query: (ε0', p*δ).

    Parameters
    ----------
    epsilon : float
        ε ∈ (0, 1]: the classical calibration's domain.
    delta : float
        δ ∈ (0, 1).
    p_star : float
        p* ∈ [0, 1].
    ratio : float
        C̃₂/C_2 ∈ (0, 1].
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.

    Returns
    -------
    (float, float)
        (ln(1 + p*(e^{ratio·ε} − 1)), p*δ).

    References
    ----------
    [RPS] Theorem 4.7; Dwork & Roth (2014) Thm A.1; docs/THEORY.md §5.
    """
    e = check_in_range("epsilon", epsilon, 0.0, 1.0, lo_closed=False, hi_closed=True)
    d = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    p = check_probability(p_star, "p_star")
    r = check_fraction(ratio, "ratio")
    require_mar(missingness_class)
    return log1p_c_expm1(r * e, p), p * d


# ----------------------------------------------------------------------------- §7 (derived here)
def fdp_missing(
    f: TradeoffFunction,
    p_star: float,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> TradeoffFunction:
    """C_{p*}(f): the f-DP guarantee of A_D when A is f-DP (f symmetric) and D is MAR.

    **Derived in this project (docs/THEORY.md §7), not a result of [RPS] or [DRS].** [DRS]'s proof
    of their Theorem 4.2 uses only that the subsampled mechanism is (ln(1 − p + p e^ε),
    p δ(ε))-DP for every ε ≥ 0; [RPS] Theorem 3.2 gives exactly that family for A_D with
    p = p*. An audit falling below this curve is a bug in the code or in the derivation.

    Parameters
    ----------
    f : TradeoffFunction
        Symmetric trade-off function of A on Z_miss^n.
    p_star : float
        p* ∈ [0, 1].
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.

    Raises
    ------
    ValueError
        If f is not a symmetric TradeoffFunction, p* is out of range, or MNAR.
    """
    if not isinstance(f, TradeoffFunction):
        raise ValueError(f"f must be a TradeoffFunction, got f={type(f).__name__}")
    if not f.symmetric:
        raise ValueError("f must be symmetric (f = f^{-1}) for C_p*(f), got f.symmetric=False")
    p = check_probability(p_star, "p_star")
    require_mar(missingness_class)
    return amplify_tradeoff(f, p)


def fdp_missing_gaussian(
    sensitivity_tilde: float,
    sigma: float,
    p_star: float,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> TradeoffFunction:
    """C_{p*}(G_{C̃₂/σ}): Gaussian mechanism on an ℓ2-FWL query under the ρ condition.

    **Derived in this project (docs/THEORY.md §7).**

    Parameters
    ----------
    sensitivity_tilde : float
        C̃₂ > 0, the masked ℓ2 sensitivity
        (:meth:`audit.theory.fwl.FWLConstants.sensitivity_under_rho`).
    sigma : float
        Noise standard deviation σ > 0 (any calibration).
    p_star : float
        p* ∈ [0, 1].
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.
    """
    c = check_positive(sensitivity_tilde, "sensitivity_tilde")
    s = check_positive(sigma, "sigma")
    p = check_probability(p_star, "p_star")
    require_mar(missingness_class)
    return amplify_tradeoff(GaussianTradeoff(c / s), p)


def fdp_missing_laplace(
    sensitivity_tilde: float,
    b: float,
    p_star: float,
    scalar_output: bool = True,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> TradeoffFunction:
    """Laplace mechanism on an ℓ1-FWL query under the ρ condition, in f-DP.

    **Derived in this project (docs/THEORY.md §7).** Scalar output: C_{p*}(Laplace curve,
    μ = C̃₁/b). Vector output: C_{p*}(f_{ε0, 0}) with ε0 = C̃₁/b (the scalar curve is not
    valid for vectors, the pure-DP curve is).

    Parameters
    ----------
    sensitivity_tilde : float
        C̃₁ > 0.
    b : float
        Laplace scale b > 0.
    p_star : float
        p* ∈ [0, 1].
    scalar_output : bool
        Whether the release is one real number.
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.
    """
    c = check_positive(sensitivity_tilde, "sensitivity_tilde")
    scale = check_positive(b, "b")
    p = check_probability(p_star, "p_star")
    check_bool(scalar_output, "scalar_output")
    require_mar(missingness_class)
    base = LaplaceTradeoff(c / scale) if scalar_output else DPTradeoff(c / scale, 0.0)
    return amplify_tradeoff(base, p)

