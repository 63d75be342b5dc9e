"""Release plans: what one user releases from several incomplete tables, accounted as one
privacy-loss distribution (``python -m audit bound --plan PLAN.toml``; docs/THEORY.md §10.6,
**derived in this project**).

A plan is a list of tables; each table has a record-level observation probability p* (its
missingness is MCAR or MAR), a mask regime and a list of releases (a noise, the (ε, δ) it is
calibrated at, how many times it is released). The accountant reads it as:

- a table with **shared** masks (one table, its statistics computed from the same incomplete
  records): the composition f_T = ⊗_j f_j^{⊗k_j} of all its releases, then [RPS] Theorem 3.2 /
  §7 **once**: C_{p*}(f_T), whose profile is δ(ε) = p*·δ_{f_T}(ln(1 + (e^ε − 1)/p*)) (§9.1);
- a table with **fresh** masks (its missingness redrawn for every release): the per-release
  guarantees compose, ⊗_j C_{p*}(f_j)^{⊗k_j} (§9.3);
- different tables have independent masks: their guarantees compose.

Each table's curve is computed as a certified lower bound on its trade-off function (the upper
envelope of the lines of an upper bound on its profile, [DRS] Proposition 2.12, from
pessimistic PLDs), turned into the discrete pair whose trade-off is exactly that
piecewise-linear curve (a segment of slope −q/p is an atom of masses (p, q)), and the pairs'
PLDs are composed: by Blackwell's theorem the true mechanism is a post-processing of that
product pair, so the ε it gives is an upper bound. A plan of one table skips that step and
reads ε from the profile itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audit._numeric import log1p_c_expm1
from audit._validate import (
    check_count,
    check_delta,
    check_in_range,
    check_probability,
)
from audit.enums import MaskRegime, NoiseKind
from audit.theory.pld import DISCRETIZATION, MAX_PLD_RELEASES, subsampled_pmf

__all__ = ["PlannedRelease", "Table", "Plan", "PlanResult", "STATISTICS",
           "account_plan"]

#: what a planned release computes (its curve per release, :meth:`PlannedRelease.base`)
STATISTICS = ("sum", "histogram", "mean")


@dataclass(frozen=True)
class PlannedRelease:
    """One statistic released ``count`` times: a Laplace release calibrated at (ε, 0) or a
    Gaussian one at (ε, δ) with the classical σ (ε ≤ 1).

    ``statistic``: ``"sum"`` (a scalar: the Laplace curve Lap_ε, or G_μ with
    μ = ε/√(2 ln(1.25/δ))); ``"histogram"`` of a categorical column, calibrated to its
    substitution sensitivity (one record moves a count between two bins: Laplace b = 2/ε, so
    two bins move by ε/2 each, Lap_{ε/2}^{⊗2}; Gaussian ℓ2 √2, the same G_μ as a sum);
    ``"mean"`` over the observed entries with the count private, a noisy sum and a noisy
    count at (ε/2, δ/2) each (their ratio is the mean; a record against a missing one moves
    both: Lap_{ε/2}^{⊗2}, or G_{μ′}^{⊗2} = G_{√2 μ′} with μ′ = (ε/2)/√(2 ln(2.5/δ)))."""

    name: str
    noise: NoiseKind
    epsilon: float
    delta: float = 0.0
    count: int = 1
    statistic: str = "sum"

    def __post_init__(self) -> None:
        where = f"release {self.name!r}"
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise, f"{where}: noise"))
        object.__setattr__(self, "count", check_count(self.count, f"{where}: count"))
        if self.statistic not in STATISTICS:
            raise ValueError(f"{where}: statistic must be one of {', '.join(STATISTICS)}, got "
                             f"statistic={self.statistic!r}")
        if self.noise is NoiseKind.GAUSSIAN:
            top = 2.0 if self.statistic == "mean" else 1.0  # each half at ε/2 ≤ 1
            check_in_range(f"{where}: epsilon", self.epsilon, 0.0, top, lo_closed=False)
            check_in_range(f"{where}: delta", self.delta, 0.0, 1.0, lo_closed=False,
                           hi_closed=False)
        else:
            check_in_range(f"{where}: epsilon", self.epsilon, 0.0, 700.0, lo_closed=False)
            if self.delta not in (0, 0.0):
                raise ValueError(f"{where}: delta must be 0 for a Laplace release, got "
                                 f"delta={self.delta!r}")

    @property
    def copies(self) -> int:
        """How many base pairs (:meth:`base`) one release composes."""
        return 2 if self.noise is NoiseKind.LAPLACE and self.statistic != "sum" else 1

    def base(self):
        """The pair of one release's curve, composed :attr:`copies` times
        (:mod:`audit.theory.pld`)."""
        from audit.theory.pld import gaussian_loss, laplace_loss

        if self.noise is NoiseKind.GAUSSIAN:
            if self.statistic == "mean":
                half = (self.epsilon / 2) / math.sqrt(2 * math.log(1.25 / (self.delta / 2)))
                return gaussian_loss(math.sqrt(2) * half)
            return gaussian_loss(self.epsilon / math.sqrt(2 * math.log(1.25 / self.delta)))
        return laplace_loss(self.epsilon if self.statistic == "sum" else self.epsilon / 2)


@dataclass(frozen=True)
class Table:
    """An incomplete table: record-level observation probability ``p_star`` ∈ (0, 1], the mask
    regime of its releases, and the releases."""

    name: str
    p_star: float
    masks: MaskRegime
    releases: tuple[PlannedRelease, ...]

    def __post_init__(self) -> None:
        p = check_probability(self.p_star, f"table {self.name!r}: p_star")
        if p == 0.0:
            raise ValueError(f"table {self.name!r}: p_star must be in (0, 1], got p_star=0")
        object.__setattr__(self, "masks",
                           MaskRegime.parse_fixed(self.masks, f"table {self.name!r}: masks"))
        if not self.releases:
            raise ValueError(f"table {self.name!r} must hold at least one release")
        total = sum(r.count * r.copies for r in self.releases)
        if total > MAX_PLD_RELEASES:
            raise ValueError(f"table {self.name!r}: at most {MAX_PLD_RELEASES} releases in all "
                             f"(a PLD composition; a Laplace histogram or mean counts twice), "
                             f"got {total}")


@dataclass(frozen=True)
class Plan:
    """The tables of a plan and the final δ of everything it releases."""

    tables: tuple[Table, ...]
    target_delta: float

    def __post_init__(self) -> None:
        if not self.tables:
            raise ValueError("a plan must hold at least one [[tables]] entry")
        d = check_delta(self.target_delta)
        if d == 0.0:
            raise ValueError("target_delta must be in (0, 1) for a plan (its tables' curves are "
                             "composed as PLDs), got target_delta=0")
        names = [t.name for t in self.tables]
        if len(set(names)) != len(names):
            raise ValueError(f"table names must be distinct, got {names}")


@dataclass(frozen=True)
class PlanResult:
    """ε of the whole plan at its final δ (an upper bound), each table's ε alone at that δ,
    and comparisons that are **not** bounds for shared tables (the per-release amplified
    guarantees composed as if every release had fresh masks)."""

    epsilon: float
    delta: float
    tables: tuple[tuple[str, float], ...]
    fresh_composition: float

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta,
                "tables": [{"name": n, "epsilon": e} for n, e in self.tables],
                "comparisons": [{
                    "name": "every release's amplified guarantee composed (NOT a bound for "
                            "tables with shared masks)",
                    "epsilon": self.fresh_composition}]}


# ----------------------------------------------------------------------------- accounting
def _composed(releases, p: float, h: float):
    """The pessimistic PLD of ⊗_j f_j^{⊗k_j} (p = 1) or ⊗_j C_p(f_j)^{⊗k_j}."""
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    out = None
    for r in releases:
        if p != 1.0 and r.copies > 1:  # C_p of the release's whole curve, not of each copy
            one, n = _subsampled_copies(r, p, h), r.count
        else:
            one = PrivacyLossDistribution(subsampled_pmf(r.base(), p, h))
            n = r.count * (r.copies if p == 1.0 else 1)
        one = one if n == 1 else one.self_compose(n)
        out = one if out is None else out.compose(one)
    return out


def _subsampled_copies(r: PlannedRelease, p: float, h: float):
    """C_p of one release whose curve is its base pair composed twice (fresh masks: the
    record's mask is drawn once per release, so C_p applies to the release's whole curve)."""
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    from audit.theory.pld import amplified_pld

    inner = PrivacyLossDistribution(subsampled_pmf(r.base(), 1.0, h)).self_compose(r.copies)
    return amplified_pld(inner, p, h)


def _table_pld(table: Table, h: float):
    """The pessimistic PLD a table's guarantee is read from: ⊗_j C_{p*}(f_j)^{⊗k_j} (fresh
    masks), or ⊗_j f_j^{⊗k_j}, to which C_{p*} is applied once (shared masks)."""
    q = table.p_star if table.masks is MaskRegime.FRESH else 1.0
    return _composed(table.releases, q, h)


def _profile(table: Table, pld):
    """δ(ε) of the table's guarantee from its PLD (an upper bound, vectorised over ε ≥ 0)."""
    from audit.theory.pld import amplified_profile

    if table.masks is MaskRegime.FRESH:
        return lambda eps: np.asarray(pld.get_delta_for_epsilon(np.asarray(eps)))
    return amplified_profile(pld, table.p_star)


def _table_epsilon(table: Table, pld, delta: float) -> float:
    """ε of one table at δ, read from its PLD (no curve step)."""
    if table.masks is MaskRegime.FRESH:
        return float(pld.get_epsilon_for_delta(delta))
    q = table.p_star
    return log1p_c_expm1(float(pld.get_epsilon_for_delta(min(1.0, delta / q))), q)


def account_plan(plan: Plan, *, discretization: float = DISCRETIZATION) -> PlanResult:
    """ε at ``plan.target_delta`` of everything the plan releases (an upper bound).

    Raises
    ------
    ValueError
        On a bad plan (each message names the table and release).

    References
    ----------
    docs/THEORY.md §9.1, §9.3 and §10.6 (derived in this project); [DRS] Proposition 2.12.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    from audit.theory.pld import profile_pmf

    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a Plan, got plan={plan!r}")
    h, d = discretization, plan.target_delta
    plds = [_table_pld(t, h) for t in plan.tables]
    alone = tuple((t.name, _table_epsilon(t, pld, d)) for t, pld in zip(plan.tables, plds,
                                                                          strict=True))
    fresh = _fresh_everything(plan, plds, h)
    if len(plan.tables) == 1:
        return PlanResult(alone[0][1], d, alone, fresh)
    total = None
    for t, table_pld in zip(plan.tables, plds, strict=True):
        top = _table_epsilon(t, table_pld, 1e-15)
        pld = PrivacyLossDistribution(profile_pmf(_profile(t, table_pld), max(top, 1e-3), h))
        total = pld if total is None else total.compose(pld)
    return PlanResult(float(total.get_epsilon_for_delta(d)), d, alone, fresh)


def _fresh_everything(plan: Plan, plds: list, h: float) -> float:
    """Every release's amplified guarantee composed as if its masks were fresh: the
    accounting that shared tables make wrong (a comparison, not a bound for them). A fresh
    table's PLD (``plds``) is already that."""
    out = None
    for t, pld in zip(plan.tables, plds, strict=True):
        one = pld if t.masks is MaskRegime.FRESH else _composed(t.releases, t.p_star, h)
        out = one if out is None else out.compose(one)
    return float(out.get_epsilon_for_delta(plan.target_delta))
