"""The bound table: every applicable theoretical bound at one parameter point (``bound`` CLI).

One row per result, each built by its own helper from the theorem functions of
:mod:`audit.theory.amplification` (:mod:`audit.theory.accountant` re-exports :func:`all_bounds`
and :class:`BoundRow`):

=====================================  =================================================
row                                    helper
=====================================  =================================================
base mechanism (no missingness)        :func:`_base_row`
[RPS] Theorem 3.2                      :func:`_theorem_3_2_row`
[RPS] Theorem 4.5 (Laplace) / 4.7      :func:`_fwl_row`
[RPS] Corollary 4.6 (Laplace)          :func:`_corollary_4_6_row` (or why not applicable)
docs/THEORY.md §7 ε at each δ          :func:`_section7_rows`
docs/THEORY.md §7 minimum error sum    :func:`_section7_rows`
=====================================  =================================================
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from audit._validate import (
    check_bool,
    check_epsilon,
    check_fraction,
    check_in_range,
    check_positive_int,
    check_probability,
    parse_enum,
)
from audit.enums import MaskRegime
from audit.theory.amplification import (
    Mechanism,
    MissingnessClass,
    amplify,
    corollary_4_6,
    gaussian_fwl_bound,
    laplace_fwl_bound,
    require_mar,
)
from audit.theory.fwl import observed_count, rho_d_is_integer
from audit.theory.profiles import dp_min_error_sum
from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    TradeoffFunction,
    amplify_tradeoff,
    epsilon_for_delta,
    min_error_sum,
)

__all__ = ["BoundRow", "BoundTable", "all_bounds", "bound_table"]

_SECTION7 = "docs/THEORY.md §7 (derived here)"
#: largest per-release ε of the k-release rows (e^ε must be a finite float)
MAX_RELEASE_EPSILON = 700.0


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
    releases: int = 1
    masks: str = "shared"
    rule: str = "single release"
    #: the numerical error of ``epsilon`` (upper minus lower PLD estimate; None: closed form)
    error: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class BoundTable:
    """What :func:`bound_table` returns: the bounds, and the rows shown for comparison that
    are **not** bounds (the per-release guarantee composed under shared masks, a CLT)."""

    bounds: tuple[BoundRow, ...]
    comparisons: tuple[BoundRow, ...]
    releases: int
    masks: MaskRegime
    target_delta: float | None


@dataclass(frozen=True)
class _Point:
    """The validated parameters of :func:`all_bounds`.

    ``delta``: the Gaussian calibration δ, or for Laplace the extra δ at which the §7 curve is
    reported (0: none). ``given_ratio``: C̃/C as the caller gave it (None: derived from ρ).
    """

    mechanism: Mechanism
    epsilon: float
    delta: float
    p_star: float
    rho: float | None
    d: int | None
    ratio: float
    given_ratio: float | None
    ratio_note: str
    scalar_output: bool

    @property
    def laplace(self) -> bool:
        return self.mechanism is Mechanism.LAPLACE

    @property
    def base_delta(self) -> float:
        """δ of the base mechanism: Laplace is pure DP."""
        return 0.0 if self.laplace else self.delta


def _equal_lj_ratio(rho: float, d: int | None) -> float:
    """C̃/C for equal L_j: ⌊ρd⌋/d, or ρ (an upper bound on it) when d is unknown."""
    return rho if d is None else observed_count(rho, d) / d


def _resolve_ratio(rho: float | None, ratio: float | None, d: int | None) -> tuple[float, str]:
    """C̃/C and the note saying where it comes from."""
    if ratio is not None:
        return ratio, f"ratio C~/C = {ratio:.6g} (given)"
    if rho is None:
        return 1.0, "no rho condition: ratio C~/C = 1"
    if d is None:
        return rho, f"ratio C~/C <= rho = {rho:.6g} (equal L_j assumed)"
    k = observed_count(rho, d)
    if k == 0:
        raise ValueError(
            f"rho*d must be >= 1 (at least one observed feature), got rho*d={rho * d!r}"
        )
    return k / d, f"ratio C~/C = floor(rho*d)/d = {k}/{d} (equal L_j assumed)"


def _point(epsilon, delta, p_star, mechanism, rho, ratio, d, scalar_output,
           missingness_class) -> _Point:
    """Validate the parameters of :func:`all_bounds` (each error names its parameter)."""
    mech = parse_enum(Mechanism, mechanism, "mechanism")
    p = check_probability(p_star, "p_star")
    require_mar(missingness_class)
    scalar = check_bool(scalar_output, "scalar_output")
    if mech is Mechanism.GAUSSIAN:
        eps = check_in_range("epsilon", epsilon, 0.0, 1.0, lo_closed=False, hi_closed=True)
        if delta is None:
            raise ValueError("delta must be in (0, 1) for the Gaussian mechanism, got delta=None")
        dlt = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    else:
        eps = check_epsilon(epsilon, allow_zero=False)
        dlt = 0.0 if delta is None else check_in_range("delta", delta, 0.0, 1.0, hi_closed=False)
    r_rho = None if rho is None else check_fraction(rho, "rho")
    dd = None if d is None else check_positive_int(d, "d")
    given = None if ratio is None else check_fraction(ratio, "ratio")
    rat, note = _resolve_ratio(r_rho, given, dd)
    return _Point(mech, eps, dlt, p, r_rho, dd, rat, given, note, scalar)


# ----------------------------------------------------------------------------- rows
def _base_row(pt: _Point) -> BoundRow:
    eps, d0 = pt.epsilon, pt.base_delta
    return BoundRow(
        "base mechanism (no missingness)", "calibration", eps, d0,
        f"{pt.mechanism.value} calibrated at (epsilon, delta) = ({eps:.6g}, {d0:.6g})",
        dp_min_error_sum(eps, d0),
    )


def _theorem_3_2_row(pt: _Point) -> BoundRow:
    e32, d32 = amplify(pt.epsilon, pt.base_delta, pt.p_star)
    return BoundRow(
        "generic amplification", "[RPS] Thm 3.2", e32, d32,
        "ln(1 + p*(e^eps - 1)), p* delta; any MAR mechanism", dp_min_error_sum(e32, d32),
    )


def _fwl_row(pt: _Point) -> BoundRow:
    """[RPS] Theorem 4.5 (Laplace) or 4.7 (Gaussian, classical calibration)."""
    if pt.laplace:
        e_fwl, d_fwl = laplace_fwl_bound(pt.epsilon, pt.p_star, pt.ratio), 0.0
        name, ref, note = "Laplace FWL", "[RPS] Thm 4.5", pt.ratio_note
    else:
        e_fwl, d_fwl = gaussian_fwl_bound(pt.epsilon, pt.delta, pt.p_star, pt.ratio)
        name, ref = "Gaussian FWL", "[RPS] Thm 4.7"
        note = pt.ratio_note + "; classical sigma = C_2 sqrt(2 ln(1.25/delta))/eps"
    return BoundRow(name, ref, e_fwl, d_fwl, note, dp_min_error_sum(e_fwl, d_fwl))


def _corollary_4_6_reason(pt: _Point) -> str | None:
    """Why Corollary 4.6 does not apply at this point (None: it does)."""
    rho, d, eps = pt.rho, pt.d, pt.epsilon
    if rho is None:
        return "no rho given"
    if rho * eps > 1.0:
        return f"rho*epsilon > 1 (rho*epsilon = {rho * eps:.6g})"
    if pt.given_ratio is not None and pt.given_ratio > _equal_lj_ratio(rho, d) + 1e-12:
        # Cor 4.6 assumes equal L_j (C~/C = floor(rho d)/d); a larger given ratio means
        # unequal constants, for which its closed form is not a bound.
        return (f"given ratio {pt.given_ratio:.6g} exceeds the equal-L_j ratio "
                f"{_equal_lj_ratio(rho, d):.6g} (Cor 4.6 assumes equal L_j)")
    if d is not None and not rho_d_is_integer(rho, d):
        return f"rho*d = {rho * d:.6g} is not an integer"
    return None


def _corollary_4_6_row(pt: _Point) -> BoundRow:
    """The Cor 4.6 row: its value, or a 'not applicable' row saying why."""
    reason = _corollary_4_6_reason(pt)
    if reason is not None:
        return BoundRow("closed form", "[RPS] Cor 4.6", None, None, f"not applicable: {reason}")
    e46 = corollary_4_6(pt.epsilon, pt.p_star, pt.rho, pt.d)
    return BoundRow("closed form", "[RPS] Cor 4.6", e46, 0.0,
                    "min((e - 1)p*, 1) rho eps; equal L_j, rho*d integer, rho*eps <= 1",
                    dp_min_error_sum(e46, 0.0))


def _section7_curve(pt: _Point) -> tuple[TradeoffFunction, str, list[float]]:
    """The §7 curve C_p*(f), its note, and the δ's at which it is reported as an ε."""
    if pt.laplace:
        mu = pt.ratio * pt.epsilon  # C~_1 / b with b = C_1 / eps
        if pt.scalar_output:
            curve = amplify_tradeoff(LaplaceTradeoff(mu), pt.p_star)
            note = f"C_p*(Laplace curve, mu = C~_1/b = {mu:.6g}); scalar output"
        else:
            curve = amplify_tradeoff(DPTradeoff(mu, 0.0), pt.p_star)
            note = f"C_p*(f_(eps0, 0)), eps0 = C~_1/b = {mu:.6g}; vector output"
        return curve, note, [0.0] + ([pt.delta] if pt.delta > 0 else [])
    c = math.sqrt(2.0 * math.log(1.25 / pt.delta))
    mu = pt.ratio * pt.epsilon / c  # C~_2 / sigma
    curve = amplify_tradeoff(GaussianTradeoff(mu), pt.p_star)
    return curve, f"C_p*(G_mu), mu = C~_2/sigma = {mu:.6g}", [pt.p_star * pt.delta]


def _section7_rows(pt: _Point) -> list[BoundRow]:
    """ε of the §7 curve at each δ, then the curve's minimum error sum."""
    curve, note, deltas = _section7_curve(pt)
    mes = float(min_error_sum(curve))
    rows = [
        BoundRow("f-DP under missingness", _SECTION7, float(epsilon_for_delta(curve, dl)), dl,
                 note + f"; epsilon at delta = {dl:.6g}", mes)
        for dl in deltas
    ]
    rows.append(BoundRow(
        "f-DP min error sum", _SECTION7, None, None,
        f"min over tests of type I + type II errors under the §7 curve = {mes:.6g}", mes,
    ))
    return rows


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

    Raises
    ------
    ValueError
        If a parameter is out of range (the message names it) or the mechanism is MNAR.

    References
    ----------
    [RPS] Theorems 3.2, 4.5, 4.7 and Corollary 4.6; docs/THEORY.md §7 (derived here).
    """
    pt = _point(epsilon, delta, p_star, mechanism, rho, ratio, d, scalar_output,
                missingness_class)
    rows = [_base_row(pt), _theorem_3_2_row(pt), _fwl_row(pt)]
    if pt.laplace:
        rows.append(_corollary_4_6_row(pt))
    return rows + _section7_rows(pt)


def _default_target_delta(pt: _Point) -> float:
    """The δ the single-release §7 row reports at: p*δ (Gaussian), δ or 0 (Laplace)."""
    return pt.delta if pt.laplace else pt.p_star * pt.delta


def bound_table(
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
    releases: int | None = None,
    masks: MaskRegime | str = MaskRegime.SHARED,
    target_delta: float | None = None,
) -> BoundTable:
    """The bound table for one release (as :func:`all_bounds`) or for k releases.

    Parameters
    ----------
    epsilon, delta, p_star, mechanism, rho, ratio, d, scalar_output, missingness_class
        As in :func:`all_bounds` (each describes **one** release; k releases are k copies of
        it, the same query); p* must be > 0 for k releases.
    releases : int, optional
        k ≥ 1 (an integral float such as 1e9 is accepted). None together with
        ``target_delta`` None: the single-release table of :func:`all_bounds`.
    masks : MaskRegime or str
        ``"shared"`` (one table, k releases) or ``"fresh"`` (masks redrawn per release).
    target_delta : float, optional
        The final δ ∈ [0, 1) of the k releases together at which every row reports ε
        (default: the δ of the single-release §7 row, p*δ for Gaussian, ``delta`` or 0 for
        Laplace). Gaussian needs it > 0.

    Returns
    -------
    BoundTable
        ``bounds`` (every row a valid bound, each naming its composition rule) and
        ``comparisons`` (rows that are not bounds).

    Raises
    ------
    ValueError
        On a parameter out of range (the message names it).

    References
    ----------
    docs/THEORY.md §9 (derived here); [RPS] Theorem 3.2; [DRS] §3 and §5; [DR] §3.5.
    """
    from audit.theory.release_rows import release_rows
    from audit.theory.releases import check_releases

    regime = MaskRegime.parse_fixed(masks)
    pt = _point(epsilon, delta, p_star, mechanism, rho, ratio, d, scalar_output,
                missingness_class)
    if releases is None and target_delta is None:
        rows = all_bounds(epsilon, delta, p_star, mechanism, rho, ratio, d,
                          scalar_output=scalar_output, missingness_class=missingness_class)
        return BoundTable(tuple(replace(r, masks=regime.value) for r in rows), (), 1, regime,
                          None)
    k = 1 if releases is None else check_releases(releases)
    if pt.epsilon > MAX_RELEASE_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_RELEASE_EPSILON:g} for the k-release "
                         f"rows (their PLDs and closed forms need e^epsilon as a float), got "
                         f"epsilon={pt.epsilon!r}")
    if not math.isfinite(k * pt.epsilon):
        raise ValueError(f"releases * epsilon must be finite (the composed epsilon of k "
                         f"releases), got releases={k}, epsilon={pt.epsilon!r}")
    if pt.p_star == 0.0:
        raise ValueError(f"p_star must be in (0, 1] for k releases, got p_star={p_star!r}")
    td = _default_target_delta(pt) if target_delta is None else check_in_range(
        "target_delta", target_delta, 0.0, 1.0, hi_closed=False)
    if not pt.laplace and td == 0.0:
        raise ValueError(f"target_delta must be in (0, 1) for the Gaussian mechanism, got "
                         f"target_delta={target_delta!r}")
    rows, comps = release_rows(pt, BoundRow, k, regime, td)
    return BoundTable(tuple(rows), tuple(comps), k, regime, td)
