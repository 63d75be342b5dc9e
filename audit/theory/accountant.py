"""The accountant: every theoretical privacy bound the project audits against.

- [RPS] Theorem 3.2 (generic amplification by MAR missing data): :func:`amplify`.
- [RPS] Theorem 4.5 (Laplace, FWL ℓ1): :func:`laplace_fwl_bound`; Corollary 4.6:
  :func:`corollary_4_6` (only where its proof holds, ρε ≤ 1).
- [RPS] Theorem 4.7 (Gaussian, FWL ℓ2, classical calibration): :func:`gaussian_fwl_bound`.
- THEORY.md §7, **derived in this project, not in [RPS] or [DRS]**: if A is f-DP (f symmetric)
  and D is MAR, A_D is C_{p*}(f)-DP (the [DRS] subsampling operator with p = p*):
  :func:`fdp_missing`, :func:`fdp_missing_gaussian`, :func:`fdp_missing_laplace`.
- :func:`all_bounds` lists every applicable bound at one parameter point (the ``bound`` CLI).

The f-DP toolkit of :mod:`audit.theory.tradeoff` is re-exported (``tradeoff_dp``, ``amplify_tradeoff``,
``epsilon_for_delta``, …) so callers need only this module.

p* (THEORY.md §2) is the probability that the differing record is at least partially observed.
It is a property of the missingness mechanism (under MAR the same for both neighbours); the
engine's mechanisms report it. :func:`p_star_mcar_iid` is the i.i.d. MCAR special case.

No result here holds for MNAR mechanisms: functions taking ``missingness_class`` refuse it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from audit._validate import (
    check_delta,
    check_epsilon,
    check_in_range,
    check_positive,
    check_positive_int,
    check_probability,
)
from audit.enums import MissingnessClass, NoiseKind
from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    TradeoffFunction,
    amplify_tradeoff,
    delta_for_epsilon,
    epsilon_for_delta,
    min_error_sum,
    tradeoff_dp,
    tradeoff_gaussian,
    tradeoff_laplace,
)

__all__ = [
    "MissingnessClass",
    "Mechanism",
    "BoundRow",
    "amplify",
    "p_star_mcar_iid",
    "laplace_fwl_bound",
    "corollary_4_6",
    "gaussian_fwl_bound",
    "fdp_missing",
    "fdp_missing_gaussian",
    "fdp_missing_laplace",
    "dp_min_error_sum",
    "all_bounds",
    # re-exports from audit.theory.tradeoff
    "tradeoff_dp",
    "tradeoff_gaussian",
    "tradeoff_laplace",
    "amplify_tradeoff",
    "delta_for_epsilon",
    "epsilon_for_delta",
    "min_error_sum",
]


# One enum per choice for the whole project (audit.enums); ``Mechanism`` is the noise kind.
Mechanism = NoiseKind


def _require_mar(missingness_class: MissingnessClass | str) -> None:
    mc = MissingnessClass.parse(missingness_class)
    if mc is MissingnessClass.MNAR:
        raise ValueError(
            "missingness_class must be one of 'mcar', 'mar' (no amplification result holds "
            "for MNAR), got missingness_class='mnar'"
        )


def _amplified_epsilon(eps: float, p: float) -> float:
    """ln(1 + p (e^ε − 1)), stable for small ε (log1p/expm1) and large ε (no overflow)."""
    if p == 0.0 or eps == 0.0:
        return 0.0
    if eps > 30.0:
        # ε + ln(p + (1 − p) e^{−ε}): e^ε − 1 would overflow past ε ≈ 709.
        return eps + math.log(p + (1.0 - p) * math.exp(-eps))
    return math.log1p(p * math.expm1(eps))


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
    _require_mar(missingness_class)
    return _amplified_epsilon(e, p), p * d


def p_star_mcar_iid(rate: float, d: int) -> float:
    """p* = 1 − r^d for i.i.d. MCAR masking of each of d features with missing rate r.

    p* is a property of the missingness mechanism (THEORY.md §2); for other mechanisms use the
    value the engine's mechanism reports.

    Parameters
    ----------
    rate : float
        Per-feature missing probability r ∈ [0, 1].
    d : int
        Number of features, ≥ 1.

    References
    ----------
    [RPS] Lemma 3.1 and the i.i.d. MCAR example; THEORY.md §2.
    """
    r = check_probability(rate, "rate")
    dd = check_positive_int(d, "d")
    return float(-math.expm1(dd * math.log(r))) if r > 0 else 1.0


def _check_ratio(ratio: object) -> float:
    return check_in_range("ratio", ratio, 0.0, 1.0, lo_closed=False, hi_closed=True)


def _check_rho(rho: object) -> float:
    return check_in_range("rho", rho, 0.0, 1.0, lo_closed=False, hi_closed=True)


def laplace_fwl_bound(
    epsilon: float,
    p_star: float,
    ratio: float,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> float:
    """Laplace mechanism on an ℓ1-FWL query under missing data: ε0' (pure DP, δ = 0).

    The mechanism adds Laplace noise of scale b = C_1/ε; every mask leaves at most ⌊ρd⌋
    features of a record observed, so the masked sensitivity is C̃_1 = ratio·C_1.

    Parameters
    ----------
    epsilon : float
        ε ≥ 0 of the calibration b = C_1/ε.
    p_star : float
        p* ∈ [0, 1].
    ratio : float
        C̃_1/C_1 ∈ (0, 1] (see :meth:`audit.theory.fwl.FWLConstants.ratio`).
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
    r = _check_ratio(ratio)
    _require_mar(missingness_class)
    return _amplified_epsilon(r * e, p)


def corollary_4_6(
    epsilon: float,
    p_star: float,
    rho: float,
    d: int | None = None,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> float:
    """Closed-form upper bound min((e − 1)p*, 1)·ρε on the ε0' of Theorem 4.5.

    Hypotheses: all L_j equal and ρd an integer (so C̃_1/C_1 = ρ), and ρε ≤ 1 — the proof uses
    e^x − 1 ≤ (e − 1)x, true only for 0 ≤ x ≤ 1 (THEORY.md §5). Outside that domain the
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
    [RPS] Corollary 4.6; THEORY.md §5.
    """
    e = check_epsilon(epsilon)
    p = check_probability(p_star, "p_star")
    r = _check_rho(rho)
    _require_mar(missingness_class)
    if r * e > 1.0:
        raise ValueError(
            "rho*epsilon must be in [0, 1] for Corollary 4.6 (its proof uses e^x - 1 <= (e - 1)x,"
            f" valid only for x <= 1), got rho*epsilon={r * e!r} (rho={rho!r}, epsilon={epsilon!r})"
        )
    if d is not None:
        dd = check_positive_int(d, "d")
        if abs(r * dd - round(r * dd)) > 1e-9:
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
        C̃_2/C_2 ∈ (0, 1].
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.

    Returns
    -------
    (float, float)
        (ln(1 + p*(e^{ratio·ε} − 1)), p*δ).

    References
    ----------
    [RPS] Theorem 4.7; Dwork & Roth (2014) Thm A.1; THEORY.md §5.
    """
    e = check_in_range("epsilon", epsilon, 0.0, 1.0, lo_closed=False, hi_closed=True)
    d = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    p = check_probability(p_star, "p_star")
    r = _check_ratio(ratio)
    _require_mar(missingness_class)
    return _amplified_epsilon(r * e, p), p * d


# ----------------------------------------------------------------------------- §7 (derived here)
def fdp_missing(
    f: TradeoffFunction,
    p_star: float,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> TradeoffFunction:
    """C_{p*}(f): the f-DP guarantee of A_D when A is f-DP (f symmetric) and D is MAR.

    **Derived in this project (THEORY.md §7), not a result of [RPS] or [DRS].** [DRS]'s proof
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
    if not getattr(f, "symmetric", False):
        raise ValueError("f must be symmetric (f = f^{-1}) for C_p*(f), got f.symmetric=False")
    p = check_probability(p_star, "p_star")
    _require_mar(missingness_class)
    return amplify_tradeoff(f, p)


def fdp_missing_gaussian(
    sensitivity_tilde: float,
    sigma: float,
    p_star: float,
    *,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> TradeoffFunction:
    """C_{p*}(G_{C̃_2/σ}): Gaussian mechanism on an ℓ2-FWL query under the ρ condition.

    **Derived in this project (THEORY.md §7).**

    Parameters
    ----------
    sensitivity_tilde : float
        C̃_2 > 0, the masked ℓ2 sensitivity (:meth:`audit.theory.fwl.FWLConstants.sensitivity_under_rho`).
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
    _require_mar(missingness_class)
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

    **Derived in this project (THEORY.md §7).** Scalar output: C_{p*}(Laplace curve, μ = C̃_1/b).
    Vector output: C_{p*}(f_{ε0, 0}) with ε0 = C̃_1/b (the scalar curve is not valid for
    vectors, the pure-DP curve is).

    Parameters
    ----------
    sensitivity_tilde : float
        C̃_1 > 0.
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
    if not isinstance(scalar_output, bool):
        raise ValueError(f"scalar_output must be a bool, got scalar_output={scalar_output!r}")
    _require_mar(missingness_class)
    base = LaplaceTradeoff(c / scale) if scalar_output else DPTradeoff(c / scale, 0.0)
    return amplify_tradeoff(base, p)


def dp_min_error_sum(epsilon: float, delta: float) -> float:
    """Smallest type I + type II error sum under (ε, δ)-DP: 2(1 − δ)/(1 + e^ε).

    The minimum of α + f_{ε,δ}(α), attained at the fixed point x* = (1 − δ)/(1 + e^ε).

    References
    ----------
    [DRS] f_{ε,δ}; THEORY.md §6.
    """
    e = check_in_range("epsilon", epsilon, 0.0, math.inf, hi_closed=True)
    d = check_delta(delta)
    if math.isinf(e):
        return 0.0
    return 2.0 * (1.0 - d) * math.exp(-e) / (1.0 + math.exp(-e)) if e > 0 else 1.0 - d


# ----------------------------------------------------------------------------- summary
@dataclass(frozen=True)
class BoundRow:
    """One line of :func:`all_bounds`.

    ``epsilon``/``delta`` are None for a row that gives no (ε, δ) (a refusal, or the §7
    min-error row). ``min_error_sum`` is the smallest type I + type II error sum any test can
    reach under the row's guarantee (None when not applicable).
    """

    name: str
    reference: str
    epsilon: float | None
    delta: float | None
    note: str
    min_error_sum: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _equal_lj_ratio(rho: float, d: int | None) -> float:
    """C̃/C for equal L_j: ⌊ρd⌋/d, or ρ (an upper bound on it) when d is unknown."""
    if d is None:
        return rho
    return min(d, math.floor(rho * d + 1e-9)) / d


def _corollary_4_6_row(eps: float, p: float, rho: float | None, d: int | None,
                       given_ratio: float | None) -> BoundRow:
    """The Cor 4.6 row of :func:`all_bounds`: its value, or why it is not applicable."""
    reason = None
    if rho is None:
        reason = "no rho given"
    elif rho * eps > 1.0:
        reason = f"rho*epsilon > 1 (rho*epsilon = {rho * eps:.6g})"
    elif given_ratio is not None and given_ratio > _equal_lj_ratio(rho, d) + 1e-12:
        # Cor 4.6 assumes equal L_j (C~/C = floor(rho d)/d); a larger given ratio means
        # unequal constants, for which its closed form is not a bound.
        reason = (f"given ratio {given_ratio:.6g} exceeds the equal-L_j ratio "
                  f"{_equal_lj_ratio(rho, d):.6g} (Cor 4.6 assumes equal L_j)")
    elif d is not None and abs(rho * d - round(rho * d)) > 1e-9:
        reason = f"rho*d = {rho * d:.6g} is not an integer"
    if reason is not None:
        return BoundRow("closed form", "[RPS] Cor 4.6", None, None, f"not applicable: {reason}")
    e46 = corollary_4_6(eps, p, rho, d)
    return BoundRow("closed form", "[RPS] Cor 4.6", e46, 0.0,
                    "min((e - 1)p*, 1) rho eps; equal L_j, rho*d integer, rho*eps <= 1",
                    dp_min_error_sum(e46, 0.0))


def all_bounds(
    epsilon: float,
    delta: float | None,
    p_star: float,
    mechanism: Mechanism | str,
    rho: float | None = None,
    ratio: float | None = None,
    d: int | None = None,
    *,
    scalar_output: bool = True,
    missingness_class: MissingnessClass | str = MissingnessClass.MAR,
) -> list[BoundRow]:
    """Every applicable bound for a Laplace/Gaussian release under MAR missing data.

    Parameters
    ----------
    epsilon : float
        Calibration ε: Laplace b = C_1/ε (ε > 0); Gaussian classical σ = C_2 √(2 ln(1.25/δ))/ε
        (ε ∈ (0, 1]).
    delta : float or None
        Gaussian: the calibration δ ∈ (0, 1) (required). Laplace: the δ ∈ [0, 1) at which the
        §7 curve is also reported as an ε (None or 0: only δ = 0).
    p_star : float
        p* ∈ [0, 1].
    mechanism : Mechanism or str
        ``"laplace"`` or ``"gaussian"``.
    rho : float, optional
        ρ ∈ (0, 1]: at most ⌊ρd⌋ features of a record observed under every mask.
    ratio : float, optional
        C̃/C ∈ (0, 1]. If omitted: ⌊ρd⌋/d when ρ and d are given, ρ when only ρ is given (an
        upper bound on ⌊ρd⌋/d; both assume equal L_j), else 1 (no ρ condition).
    d : int, optional
        Number of features (for ⌊ρd⌋ and Corollary 4.6's integrality condition).
    scalar_output : bool
        Laplace only: scalar release (use the Laplace trade-off curve in §7) or vector release
        (use f_{ε0, 0}).
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.

    Returns
    -------
    list of BoundRow
        Base mechanism, Thm 3.2, Thm 4.5 or 4.7, Cor 4.6 (Laplace; a 'not applicable' row
        outside its domain), §7 ε at the theorem's δ (and at ``delta`` for Laplace), and the §7
        curve's minimum error sum.
    """
    mech = NoiseKind.parse(mechanism, "mechanism")
    p = check_probability(p_star, "p_star")
    _require_mar(missingness_class)
    if not isinstance(scalar_output, bool):
        raise ValueError(f"scalar_output must be a bool, got scalar_output={scalar_output!r}")
    if mech is Mechanism.GAUSSIAN:
        eps = check_in_range("epsilon", epsilon, 0.0, 1.0, lo_closed=False, hi_closed=True)
        if delta is None:
            raise ValueError("delta must be in (0, 1) for the Gaussian mechanism, got delta=None")
        dlt = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    else:
        eps = check_epsilon(epsilon, allow_zero=False)
        dlt = 0.0 if delta is None else check_in_range("delta", delta, 0.0, 1.0, hi_closed=False)
    r_rho = None if rho is None else _check_rho(rho)
    dd = None if d is None else check_positive_int(d, "d")
    if ratio is not None:
        rat = _check_ratio(ratio)
        ratio_note = f"ratio C~/C = {rat:.6g} (given)"
    elif r_rho is not None:
        if dd is not None:
            k = min(dd, math.floor(r_rho * dd + 1e-9))
            if k == 0:
                raise ValueError(
                    f"rho*d must be >= 1 (at least one observed feature), got rho*d={r_rho * dd!r}"
                )
            rat = k / dd
            ratio_note = f"ratio C~/C = floor(rho*d)/d = {k}/{dd} (equal L_j assumed)"
        else:
            rat = r_rho
            ratio_note = f"ratio C~/C <= rho = {rat:.6g} (equal L_j assumed)"
    else:
        rat = 1.0
        ratio_note = "no rho condition: ratio C~/C = 1"

    rows: list[BoundRow] = []
    base_delta = 0.0 if mech is Mechanism.LAPLACE else dlt
    rows.append(
        BoundRow(
            "base mechanism (no missingness)",
            "calibration",
            eps,
            base_delta,
            f"{mech.value} calibrated at (epsilon, delta) = ({eps:.6g}, {base_delta:.6g})",
            dp_min_error_sum(eps, base_delta),
        )
    )
    e32, d32 = amplify(eps, base_delta, p)
    rows.append(
        BoundRow(
            "generic amplification",
            "[RPS] Thm 3.2",
            e32,
            d32,
            "ln(1 + p*(e^eps - 1)), p* delta; any MAR mechanism",
            dp_min_error_sum(e32, d32),
        )
    )
    if mech is Mechanism.LAPLACE:
        e_fwl, d_fwl = laplace_fwl_bound(eps, p, rat), 0.0
        rows.append(
            BoundRow(
                "Laplace FWL",
                "[RPS] Thm 4.5",
                e_fwl,
                d_fwl,
                ratio_note,
                dp_min_error_sum(e_fwl, d_fwl),
            )
        )
        rows.append(_corollary_4_6_row(eps, p, r_rho, dd, None if ratio is None else rat))
        mu = rat * eps  # C~_1 / b with b = C_1 / eps
        if scalar_output:
            curve = amplify_tradeoff(LaplaceTradeoff(mu), p)
            curve_note = f"C_p*(Laplace curve, mu = C~_1/b = {mu:.6g}); scalar output"
        else:
            curve = amplify_tradeoff(DPTradeoff(mu, 0.0), p)
            curve_note = f"C_p*(f_(eps0, 0)), eps0 = C~_1/b = {mu:.6g}; vector output"
        deltas = [0.0] + ([dlt] if dlt > 0 else [])
    else:
        c = math.sqrt(2.0 * math.log(1.25 / dlt))
        e_fwl, d_fwl = gaussian_fwl_bound(eps, dlt, p, rat)
        rows.append(
            BoundRow(
                "Gaussian FWL",
                "[RPS] Thm 4.7",
                e_fwl,
                d_fwl,
                ratio_note + "; classical sigma = C_2 sqrt(2 ln(1.25/delta))/eps",
                dp_min_error_sum(e_fwl, d_fwl),
            )
        )
        mu = rat * eps / c  # C~_2 / sigma
        curve = amplify_tradeoff(GaussianTradeoff(mu), p)
        curve_note = f"C_p*(G_mu), mu = C~_2/sigma = {mu:.6g}"
        deltas = [p * dlt]
    mes = float(min_error_sum(curve))
    for dl in deltas:
        e7 = float(epsilon_for_delta(curve, dl))
        rows.append(
            BoundRow(
                "f-DP under missingness",
                "THEORY §7 (derived here)",
                e7,
                dl,
                curve_note + f"; epsilon at delta = {dl:.6g}",
                mes,
            )
        )
    rows.append(
        BoundRow(
            "f-DP min error sum",
            "THEORY §7 (derived here)",
            None,
            None,
            f"min over tests of type I + type II errors under the §7 curve = {mes:.6g}",
            mes,
        )
    )
    return rows
