"""The k-release rows of the bound table (``bound --releases K --masks shared|fresh``).

Every row reports ε at one final δ (``target_delta``) for the k releases together and names
its composition rule; a row that is not a bound (the per-release guarantee composed under
shared masks, the central-limit approximation) is returned among the *comparisons*. The
formulas are those of :mod:`audit.theory.releases` (docs/THEORY.md §9).
"""

from __future__ import annotations

import math
from dataclasses import replace

from audit.enums import MaskRegime
from audit.theory.amplification import amplify
from audit.theory.pld import MAX_PLD_RELEASES
from audit.theory.releases import (
    advanced_composition,
    clt_mu,
    composed_epsilon,
    fresh_masks_bracket,
    releases_epsilon,
)
from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    TradeoffFunction,
    amplify_tradeoff,
    epsilon_for_delta,
)

__all__ = ["release_rows"]

_REF = "docs/THEORY.md §9 (derived here)"


def _per_release_curve(pt, ratio: float) -> TradeoffFunction:
    """f of one release with sensitivity ratio·C: G_μ, Lap_μ (scalar) or f_(μ,0) (vector)."""
    if pt.laplace:
        mu = ratio * pt.epsilon
        return LaplaceTradeoff(mu) if pt.scalar_output else DPTradeoff(mu, 0.0)
    return GaussianTradeoff(ratio * pt.epsilon / math.sqrt(2.0 * math.log(1.25 / pt.delta)))


def _shared_rows(pt, k: int, td: float, row) -> tuple[list, list]:
    generic, refined = _per_release_curve(pt, 1.0), _per_release_curve(pt, pt.ratio)
    inner = td / pt.p_star
    gen = composed_epsilon(generic, k, min(inner, 1.0))
    e32, d32 = amplify(gen.epsilon, min(inner, 1.0), pt.p_star)
    rows = [row("generic amplification of the composition", "[RPS] Thm 3.2 once", e32, d32,
                f"ln(1 + p*(e^eps_k - 1)) with eps_k at delta/p*: {gen.rule}")]
    e9 = releases_epsilon(refined, pt.p_star, k, td, MaskRegime.SHARED)
    rows.append(row("f-DP of the composition under missingness", _REF, e9.epsilon, td,
                    f"{e9.rule}; {pt.ratio_note}"))
    comps = []
    if k <= MAX_PLD_RELEASES:
        ef = releases_epsilon(refined, pt.p_star, k, td, MaskRegime.FRESH)
        comps.append(row("per-release guarantee composed (NOT a bound for shared masks)", _REF,
                         ef.epsilon, td, f"{ef.rule}: valid only for fresh masks"))
    return rows, comps


def _fresh_rows(pt, k: int, td: float, row) -> tuple[list, list]:
    refined = _per_release_curve(pt, pt.ratio)
    per = amplify_tradeoff(refined, pt.p_star)
    rows = [row("basic composition of the per-release f-DP bound", "[DR] Thm 3.16",
                k * epsilon_for_delta(per, td / k), td,
                "k eps' with eps' of C_p*(f) at delta/k")]
    if td > 0:
        e1 = epsilon_for_delta(per, td / (2 * k))
        ea, _ = advanced_composition(e1, td / (2 * k), k, td / 2)  # δ: k·δ/(2k) + δ/2 = δ
        rows.append(row("advanced composition of the per-release f-DP bound", "[DR] Thm 3.20",
                        ea, td, "eps' of C_p*(f) at delta/(2k), slack delta/2"))
    else:
        rows.append(row("advanced composition of the per-release f-DP bound", "[DR] Thm 3.20",
                        None, None, "not applicable at delta = 0 (needs a slack delta > 0)"))
    if k <= MAX_PLD_RELEASES:
        eps, err, h = fresh_masks_bracket(refined, pt.p_star, k, td)
        rule = ("k ln(1 + p*(e^eps0 - 1)): pure composition of C_p*(f) (exact at delta = 0)"
                if h == 0.0 else f"C_p*(f)^(k-fold) by PLD (pessimistic, h = {h:g}; error = "
                f"pessimistic - optimistic)")
        rows.append(replace(row("f-DP composition under fresh masks", _REF, eps, td,
                                f"{rule}; {pt.ratio_note}"), error=err))
        rows.extend(_direction_rows(pt, refined, k, td, row))
    else:
        clt = "; the CLT approximation is under comparisons" if td > 0 else ""
        rows.append(row("f-DP composition under fresh masks", _REF, None, None,
                        f"not computed: a PLD composition of k > {MAX_PLD_RELEASES} releases is "
                        f"too costly; the rows above hold{clt}"))
    comps = []
    if td > 0:
        mu = clt_mu(refined, pt.p_star, k)
        comps.append(row("CLT approximation (NOT a bound)", "[DRS] §5 CLT",
                         epsilon_for_delta(GaussianTradeoff(mu), td), td,
                         f"G_(p* sqrt(k chi2(f))), mu = {mu:.6g}: an approximation"))
    return rows, comps


def _direction_rows(pt, f: TradeoffFunction, k: int, td: float, row) -> list:
    """The fresh-mask row of the record-vs-missing pairs: the remove pair ((1 − p*)Noise(0) +
    p*Noise(μ), Noise(0)) and its add order composed k times each, ε the larger (exact for
    those pairs; docs/THEORY.md §10.4). Scalar releases only (a vector Laplace release has no
    such pair)."""
    from audit.theory.worst_case import Setting, fresh_pair

    if not isinstance(f, (GaussianTradeoff, LaplaceTradeoff)) or td == 0.0 or pt.p_star == 1.0:
        return []
    noise = "gaussian" if isinstance(f, GaussianTradeoff) else "laplace"
    setting = Setting(noise, 1.0, (0.0, f.mu), 0.0, pt.p_star, k, MaskRegime.FRESH)
    low, high = fresh_pair(setting, "hi", "lo", td)  # "lo" reads as the missing record
    rule = ("remove and add orders of the pair ((1 - p*) Noise(0) + p* Noise(mu), Noise(0)) "
            "composed separately, the larger; covers pairs where one record reads as missing "
            f"(count-like pairs), not every substitution pair; {pt.ratio_note}")
    return [replace(row("fresh masks, direction by direction: record vs missing record",
                        "docs/THEORY.md §10.4 (derived here)", high, td, rule),
                    error=high - low)]


def release_rows(pt, base_row_type, releases: int, masks: MaskRegime,
                 target_delta: float) -> tuple[list, list]:
    """(bounds, comparisons) for k releases at the final δ ``target_delta``.

    ``pt`` is the validated point of :func:`audit.theory.bounds.bound_table`;
    ``base_row_type`` its ``BoundRow`` class.
    """
    k, td = releases, target_delta

    def row(name, ref, eps, dlt, rule):
        return base_row_type(name, ref, eps, dlt, rule, None, k, masks.value, rule)

    base = composed_epsilon(_per_release_curve(pt, 1.0), k, td)
    first = row("base mechanism, k releases (no missingness)", "composition",
                base.epsilon, td, base.rule)
    rows, comps = (_shared_rows if masks is MaskRegime.SHARED else _fresh_rows)(pt, k, td, row)
    if pt.laplace and td > 0.0:  # every Laplace row: ε(δ) ≤ ε(0)
        pure = release_rows(pt, base_row_type, k, masks, 0.0)[0]
        return _delta_monotone_cap([first, *rows], pure), comps
    return [first, *rows], comps


def _delta_monotone_cap(rows: list, pure: list) -> list:
    """Each row at δ > 0 capped at a δ = 0 bound of the same mechanism: an (ε, 0)-DP mechanism
    is (ε, δ)-DP, so no valid ε(δ) need exceed ε(0). The first row (no missingness) is capped
    at its own δ = 0 value; every other row (the mechanism with missingness, or a set of its
    pairs) at the smallest δ = 0 value of those rows (``pure``: the same rows at δ = 0)."""
    at_zero = {r.name: r.epsilon for r in pure if r.epsilon is not None}
    mechanism = min((r.epsilon for r in pure[1:] if r.epsilon is not None), default=math.inf)
    out = []
    for i, r in enumerate(rows):
        cap = at_zero.get(r.name, math.inf) if i == 0 else min(
            at_zero.get(r.name, math.inf), mechanism)
        if r.epsilon is None or r.epsilon <= cap:
            out.append(r)
            continue
        rule = f"{r.rule}; capped at the delta = 0 value {cap:.6g} (eps non-increasing in delta)"
        error = None if r.error is None else max(0.0, r.error - (r.epsilon - cap))
        out.append(replace(r, epsilon=cap, note=rule, rule=rule, error=error))
    return out
