"""Exact privacy of the audited pair over k releases: the ceilings of docs/THEORY.md §9.5.

- shared masks, Gaussian, the same query (any mask law): one release at σ/√k
  (:func:`shared_pair`, :func:`shared_pair_epsilon`);
- record-level masks (:class:`RecordLevelPair`, :func:`record_level_pair_epsilon`): a 1-D
  sufficient statistic (Gaussian: the projection on the contribution direction; Laplace: the
  composed loss S of the observed record, and at δ = 0 the saturating likelihood ratio);
- fresh masks, any scalar pair: the k-fold composition of the pair's PLD in both orders
  (:func:`fresh_pair_epsilon`).

Re-exported by :mod:`audit.theory.releases` and the accountant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audit._numeric import brentq, log1p_c_expm1, log1p_expm1_div
from audit._validate import check_count, check_delta, check_positive, check_probability
from audit.enums import MaskRegime, NoiseKind
from audit.mixture import Mixture
from audit.theory.pair.ctd import ctd_pair_plds
from audit.theory.pair.epsilon import pair_epsilon
from audit.theory.pair.masses import PairValue, check_pair
from audit.theory.pld import (
    DISCRETIZATION,
    MAX_PLD_RELEASES,
    compose_epsilon,
    loss_step,
    pair_pmfs,
)

__all__ = [
    "shared_pair",
    "shared_pair_epsilon",
    "RecordLevelPair",
    "record_level_pair_epsilon",
    "fresh_pair_epsilon",
    "fresh_pair_bounds",
    "record_level_form",
    "releases_pair_epsilon",
]


def _check_observation(q: object) -> float:
    v = check_probability(q, "observation")
    if v == 0.0:
        raise ValueError(f"observation must be in (0, 1], got observation={q!r}")
    return v


def shared_pair(P: Mixture, Q: Mixture, releases: int) -> tuple[Mixture, Mixture]:
    """The pair of one Gaussian release at σ/√k, equivalent to k releases of the same query
    from one table (the mean is sufficient given the mask; docs/THEORY.md §9.5).

    Raises
    ------
    ValueError
        For Laplace mixtures (the mean is not sufficient: use
        :func:`record_level_pair_epsilon` under record-level masks) or a bad k.
    """
    P, Q = check_pair(P, Q)
    k = check_count(releases, "releases")
    if P.noise is not NoiseKind.GAUSSIAN:
        raise ValueError("P must be a Gaussian mixture for the one-release reduction of shared "
                         f"masks (Laplace has no 1-D sufficient statistic), got P.noise="
                         f"{P.noise.value!r}")
    s = P.scale / math.sqrt(k)
    return (Mixture(P.weights, P.scalar_shifts, P.noise, s),
            Mixture(Q.weights, Q.scalar_shifts, Q.noise, s))


def shared_pair_epsilon(P: Mixture, Q: Mixture, releases: int, delta: float) -> PairValue:
    """Exact ε(δ) of the audited pair over k Gaussian releases of one query from one table."""
    return pair_epsilon(*shared_pair(P, Q, releases), delta)


@dataclass(frozen=True, eq=False)
class RecordLevelPair:
    """The audited pair under record-level masks: the differing record is observed with
    probability ``observation`` (= p*) or missing entirely (every release then reads 0).

    Parameters
    ----------
    observation : float
        q ∈ (0, 1].
    contributions, contributions_prime : array_like, shape (k,)
        What the record adds to release j under z and under z′ when observed.
    noise : NoiseKind or str
        Noise of every release.
    scales : float or array_like, shape (k,)
        Noise scale of each release (b or σ), > 0.
    """

    observation: float
    contributions: np.ndarray
    contributions_prime: np.ndarray
    noise: NoiseKind
    scales: np.ndarray

    def __post_init__(self) -> None:
        q = _check_observation(self.observation)
        a = np.atleast_1d(np.asarray(self.contributions, dtype=np.float64))
        b = np.atleast_1d(np.asarray(self.contributions_prime, dtype=np.float64))
        if a.ndim != 1 or a.shape != b.shape or not np.all(np.isfinite(a) & np.isfinite(b)):
            raise ValueError("contributions and contributions_prime must be finite arrays of one "
                             f"shape (k,), got shapes {a.shape} and {b.shape}")
        s = np.broadcast_to(np.asarray(self.scales, dtype=np.float64), a.shape).copy()
        if not np.all(np.isfinite(s) & (s > 0)):
            raise ValueError(f"scales must be in (0, inf), got scales={self.scales!r}")
        object.__setattr__(self, "observation", q)
        object.__setattr__(self, "contributions", a)
        object.__setattr__(self, "contributions_prime", b)
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise))
        object.__setattr__(self, "scales", s)

    @property
    def releases(self) -> int:
        return int(self.contributions.shape[0])


def _observed_part(M: Mixture) -> tuple[float, float] | None:
    """(q, a) when M = (1 − q)·Noise(0) + q·Noise(a) (a point mass at 0: q = 0), else None."""
    shifts, w = M.scalar_shifts, M.weights
    at_zero = shifts == 0.0
    if at_zero.all():
        return 0.0, 0.0
    if M.n_components > 2 or (~at_zero).sum() != 1:
        return None
    return float(w[~at_zero][0]), float(shifts[~at_zero][0])


def record_level_form(P: Mixture, Q: Mixture, releases: int) -> RecordLevelPair | None:
    """The k-release pair of (P, Q) in record-level form, when it has one; else ``None``.

    k releases of one query from one masked table, where each single-release law puts mass
    1 − q on shift 0 (the differing record missing, contributing 0 to every release) and q on
    one shift (observed), with the same q on both sides (or one side a point mass at 0): the
    law over the k releases is then (1 − q) ⊗_j Noise(0) + q ⊗_j Noise(a), the form of
    :class:`RecordLevelPair`, whatever the mechanism that produced it (docs/THEORY.md §9.5).
    """
    P, Q = check_pair(P, Q)
    k = check_count(releases, "releases")
    p_part, q_part = _observed_part(P), _observed_part(Q)
    if p_part is None or q_part is None:
        return None
    weights = {w for w, a in (p_part, q_part) if a != 0.0}
    if len(weights) > 1 and abs(p_part[0] - q_part[0]) > 1e-12:
        return None
    q = max(weights) if weights else 1.0
    ones = np.ones(k)
    return RecordLevelPair(q, p_part[1] * ones, q_part[1] * ones, P.noise, P.scale)


def releases_pair_epsilon(P: Mixture, Q: Mixture, releases: int, delta: float,
                          masks) -> tuple[PairValue | None, str]:
    """Exact ε(δ) of the audited pair over k releases of one query, where a low-dimensional
    form exists, and the method used (or why there is none).

    Shared masks: Gaussian → one release at σ/√k (:func:`shared_pair_epsilon`); a pair in
    record-level form (:func:`record_level_form`) → :func:`record_level_pair_epsilon` (for
    Laplace, one side must contribute 0); otherwise none (Laplace over feature-wise masks:
    no low-dimensional form, §9.5). Fresh masks: :func:`fresh_pair_epsilon` (k at most
    ``MAX_PLD_RELEASES`` for δ > 0).

    Parameters
    ----------
    P, Q : Mixture
        The scalar single-release laws of the pair.
    releases : int
    delta : float
    masks : MaskRegime or str
    """
    P, Q = check_pair(P, Q)
    k = check_count(releases, "releases")
    d = check_delta(delta)
    if MaskRegime.parse_fixed(masks, "masks") is MaskRegime.FRESH:
        if d > 0 and k > MAX_PLD_RELEASES:
            return None, f"no exact value: a PLD composition of more than {MAX_PLD_RELEASES} " \
                         "releases is too costly"
        return fresh_pair_epsilon(P, Q, k, d), "k-fold product of the pair, PLD both orders"
    if P.noise is NoiseKind.GAUSSIAN:
        return shared_pair_epsilon(P, Q, k, d), "one release at sigma/sqrt(k) (exact)"
    form = record_level_form(P, Q, k)
    zero_side = form is not None and (not form.contributions.any()
                                      or not form.contributions_prime.any())
    if not zero_side or (d > 0 and k > MAX_PLD_RELEASES):
        return None, ("no exact value: no low-dimensional form of these Laplace releases "
                      "(feature-wise masks, or two records that both contribute; "
                      "docs/THEORY.md §9.5)")
    return record_level_pair_epsilon(form, d), "record-level pair: 1-D loss of the record"


def record_level_pair_epsilon(pair: RecordLevelPair, delta: float, *,
                              discretization: float = DISCRETIZATION) -> PairValue:
    """Exact ε(δ) of a record-level pair over its k releases from one table (shared mask).

    Gaussian: whitened, the two contribution vectors must be parallel (one may be 0); the
    projection on their direction is sufficient, a 1-D pair solved by
    :func:`audit.theory.pair.pair_epsilon`. Laplace: one side must contribute 0 (a record
    against a record read as 0); with S = Σ_j ln(p_j/q_j) the loss of the observed record,
    D_{e^ε}(P‖Q) = q δ_S(ln((e^ε − 1 + q)/q)) and D_{e^ε}(Q‖P) = a δ_S(ln(e^ε q/a)),
    a = 1 − e^ε(1 − q) (0 when a ≤ 0), δ_S the profile of the k-fold Laplace composition; at
    δ = 0 the likelihood ratio saturates and ε = ln(1 + q(e^{Σ|a_j|/b_j} − 1)) exactly. The
    Laplace loss grid's step is :func:`audit.theory.pld.loss_step` of ``discretization``
    and Σ|a_j|/b_j; the value's error is the two rounded PLDs' difference either way.

    Raises
    ------
    ValueError
        Outside these forms (no low-dimensional reduction is implemented), or a bad δ.

    References
    ----------
    docs/THEORY.md §9.5.
    """
    if not isinstance(pair, RecordLevelPair):
        raise ValueError(f"pair must be a RecordLevelPair, got pair={pair!r}")
    d = check_delta(delta)
    if pair.noise is NoiseKind.GAUSSIAN:
        return _record_level_gaussian(pair, d)
    return _record_level_laplace(pair, d, check_positive(discretization, "discretization"))


def _record_level_gaussian(pair: RecordLevelPair, delta: float) -> PairValue:
    u, v = pair.contributions / pair.scales, pair.contributions_prime / pair.scales
    ref = u if np.linalg.norm(u) >= np.linalg.norm(v) else v
    norm = float(np.linalg.norm(ref))
    if norm == 0.0:
        return PairValue(0.0, 0.0)
    e = ref / norm
    a, b = float(u @ e), float(v @ e)
    if np.linalg.norm(u - a * e) + np.linalg.norm(v - b * e) > 1e-12 * (1 + norm):
        raise ValueError("contributions/scales and contributions_prime/scales must be parallel "
                         "for the 1-D reduction of a Gaussian record-level pair, got "
                         f"contributions={pair.contributions!r}, "
                         f"contributions_prime={pair.contributions_prime!r}")
    q = pair.observation
    P = Mixture([q, 1 - q], [a, 0.0], NoiseKind.GAUSSIAN, 1.0) if q < 1 else \
        Mixture([1.0], [a], NoiseKind.GAUSSIAN, 1.0)
    Q = Mixture([q, 1 - q], [b, 0.0], NoiseKind.GAUSSIAN, 1.0) if q < 1 else \
        Mixture([1.0], [b], NoiseKind.GAUSSIAN, 1.0)
    return pair_epsilon(P, Q, delta)


def _laplace_sum_pld(mus: np.ndarray, h: float, pessimistic: bool):
    """The PLD of S = Σ_j ln(p_j/q_j), Lap(μ_j) against Lap(0) (unit scale), dp_accounting."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    uniq = np.unique(mus)
    out = None
    for m in uniq:
        one = dpl.from_laplace_mechanism(1.0, sensitivity=float(m),
                                         pessimistic_estimate=pessimistic,
                                         value_discretization_interval=h,
                                         use_connect_dots=pessimistic)
        n = int(np.sum(mus == m))
        one = one if n == 1 else one.self_compose(n)
        out = one if out is None else out.compose(one)
    return out


def _record_level_laplace(pair: RecordLevelPair, delta: float, h: float) -> PairValue:
    a, b = pair.contributions, pair.contributions_prime
    if np.any(b != 0) and np.any(a != 0):
        raise ValueError("contributions or contributions_prime must be all 0 for a Laplace "
                         "record-level pair (a record against one read as 0), got "
                         f"contributions={a!r}, contributions_prime={b!r}")
    mus = np.abs(a + b) / pair.scales
    mus = mus[mus > 0]
    if mus.size == 0:
        return PairValue(0.0, 0.0)
    q = pair.observation
    eps0 = log1p_c_expm1(float(np.sum(mus)), q)
    if delta == 0.0:
        return PairValue(eps0, 0.0)
    h = loss_step(h, float(np.sum(mus)))
    if pair.releases > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for a Laplace pair at "
                         f"delta > 0, got {pair.releases}")
    values = []
    for pess in (True, False):
        s_pld = _laplace_sum_pld(mus, h, pess)

        def dlt(e: float, s_pld=s_pld) -> float:
            up = q * float(s_pld.get_delta_for_epsilon(log1p_expm1_div(e, q)))
            # a = 1 − e^ε(1 − q), 0 (and the remove order 0) once e^ε(1 − q) ≥ 1
            lead = -math.expm1(min(e + math.log1p(-q), 0.0)) if q < 1 else 1.0
            down = 0.0 if lead <= 0 else lead * float(
                s_pld.get_delta_for_epsilon(e + math.log(q) - math.log(lead)))
            return max(up, down)

        # the optimistic estimate's truncated tails (≤ 1e-15 per composition) are paid in δ
        target = delta if pess else min(1.0, delta + 1e-15 * (pair.releases + 1))
        if dlt(0.0) <= target:
            values.append(0.0)
        elif dlt(eps0) > target:
            values.append(eps0)
        else:
            values.append(brentq(lambda e, f=dlt, t=target: f(e) - t, 0.0, eps0, xtol=1e-12))
    hi, lo = values
    return PairValue(0.5 * (hi + lo), 0.5 * (hi - lo))


def fresh_pair_epsilon(P: Mixture, Q: Mixture, releases: int, delta: float, *,
                       discretization: float = DISCRETIZATION) -> PairValue:
    """Exact ε(δ) of the audited pair over k releases with fresh masks: the k-fold product
    (P^{⊗k}, Q^{⊗k}), both orders; ``value`` the midpoint and ``error`` the half-width of
    :func:`fresh_pair_bounds` (at δ = 0, k times one release's value and error)."""
    if check_delta(delta) == 0.0:
        one = pair_epsilon(*check_pair(P, Q), 0.0)
        k = check_count(releases, "releases")
        return PairValue(k * one.value, k * one.error)
    lo, hi = fresh_pair_bounds(P, Q, releases, delta, discretization=discretization)
    return PairValue(0.5 * (hi + lo), 0.5 * max(hi - lo, 0.0))


def fresh_pair_bounds(P: Mixture, Q: Mixture, releases: int, delta: float, *,
                      discretization: float = DISCRETIZATION) -> tuple[float, float]:
    """(lower, upper) of the exact ε(δ) of the pair over k releases with fresh masks: the
    k-fold product (P^{⊗k}, Q^{⊗k}), both orders (an upper end of ∞ keeps its lower end).

    The pair's PLD in both orders is composed k times by dp_accounting, once from a
    pessimistic (upper) and once from an optimistic (lower) PMF. Where the pair's loss is
    monotone on known pieces (Laplace; Gaussian with one side's shifts all ≥ the other's)
    the PMFs are Connect-the-Dots and
    merged cells (:func:`audit.theory.pair.ctd.ctd_pair_plds`), whose error is of second
    order in the grid step; otherwise losses rounded up and down
    (:func:`audit.theory.pld.pair_pmfs`), whose error grows by about h/2 per release (docs/
    THEORY.md §10.5). At δ = 0, k·sup|ln p/q| (exact for Laplace, whose likelihood ratio
    saturates; infinite for most Gaussian pairs).

    Raises
    ------
    ValueError
        On a bad pair, k, δ, or k > ``MAX_PLD_RELEASES``.

    References
    ----------
    docs/THEORY.md §9.5.
    """
    P, Q = check_pair(P, Q)
    k = check_count(releases, "releases")
    d = check_delta(delta)
    if d == 0.0:
        one = pair_epsilon(P, Q, 0.0)
        return k * (one.value - one.error), k * (one.value + one.error)
    if k > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for a PLD composition "
                         f"(too costly beyond), got releases={releases!r}")
    plds = ctd_pair_plds(P, Q, discretization)
    if plds is None:  # a loss not known to be monotone on pieces: losses rounded to the grid
        plds = (pair_pmfs(P, Q, discretization),
                pair_pmfs(P, Q, discretization, pessimistic=False))
    hi = compose_epsilon(plds[0], k, d)
    # the optimistic estimate's truncated tails (≤ 1e-15 per composition) are paid in δ
    lo = compose_epsilon(plds[1], k, min(1.0, d + 2e-15))
    return lo, hi
