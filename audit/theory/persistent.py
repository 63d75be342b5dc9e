"""k releases from re-collected data whose non-response persists: an upper bound on the pair's
privacy (docs/THEORY.md §10.7).

Each of k collections (one release each) keeps the differing record's previous mask with
probability r, else redraws it (observed with probability q, record-level MCAR): r = 1 is one
mask shared by the k releases, r = 0 a mask redrawn for every release (fresh masks). The mask
path is a Markov chain, and the exact pair is a mixture over its 2^k paths.

**Conditioning on the redraw epochs.** Collection 1 draws the mask and each collection t ≥ 2
redraws it with probability 1 − r, independently of everything else. Given the set E of
collections that redraw, the mask is constant within each epoch (a run of collections between
redraws) and independent across epochs, so the k releases are the composition of one
shared-mask pair per epoch, of the epochs' lengths. E has the same law on both sides and does
not depend on the data, so by joint convexity of the hockey-stick divergence

    δ(ε) ≤ Σ_E P(E) δ_E(ε),

δ_E the profile of the composition of shared-mask pairs of E's epoch lengths. It depends on E
only through the multiset of epoch lengths (a partition of k); a partition with m parts of
multiplicities c_i has probability (m! / Π c_i!) (1 − r)^(m − 1) r^(k − m). At r = 1 (one
epoch) and r = 0 (k epochs of one) there is one partition and the bound is the exact profile of
the shared-mask and the fresh-mask pair; in between it is an upper bound.

**Scope.** Gaussian noise σ, a given pair of values (a, b) of the differing record with a
missing entry read as m (the record against the missing record: b = m); a shared epoch of
length ℓ is then exactly one release at σ/√ℓ (the mean is sufficient, §9.2), whose pair of
scalar mixtures (1 − q)N(m, σ²/ℓ) + qN(a, σ²/ℓ) against the same with b has its PLD by
:func:`audit.theory.pld.pair_pmfs`. Every profile is a pessimistic PLD (losses rounded up), so
the result is an upper bound on the pair's ε. A Laplace epoch has no one-dimensional
sufficient statistic: :mod:`audit.theory.persistent_laplace` bounds it over the domain.

**A lower bound** from post-processing: the sum of the k releases is a function of them, so
its ε is at most the pair's. Given the number j of collections that observe the record (its
law, by a recursion over the chain's states), the sum is N(j·a + (k − j)·m, kσ²) on one side
and the same with b on the other: a pair of scalar mixtures whose exact ε
(:func:`audit.theory.pair.pair_epsilon`) is the lower end. At r = 1 the sum is sufficient and
the two ends meet; at r = 0.5, k = 3 (q = 0.3, σ = 2, a = 1, b = m = 0, δ = 10⁻⁵) they give
[1.8362, 2.0569] around the direct 3-dimensional integration's 1.8420.

**The box bracket** (2 ≤ k ≤ 4, :mod:`audit.theory.persistent_boxes`): a certified lower and
upper bound on the pair's exact ε from a partition of the first k − 1 outputs into boxes, the
last integrated in closed form; :func:`persistent_bound` intersects it with the two ends above
where they do not meet. At r = 0.5, k = 3 it closes to [1.8398, 1.8474] at the default
tolerance (0.5 % of ε) and to [1.84189, 1.84237] at 10⁻³ (0.4 s).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from audit._numeric import brentq
from audit._validate import check_delta, check_positive, check_probability
from audit.mixture import Mixture
from audit.theory.pld import DISCRETIZATION

__all__ = ["PersistentPair", "PersistentBound", "persistent_epsilon", "persistent_bound",
           "persistent_lower", "persistent_envelope_epsilon", "persistent_refusal",
           "epoch_partitions", "observed_counts", "epochs_epsilon",
           "MAX_PERSISTENT_RELEASES"]

#: most releases: the bound composes one PLD per partition of k (77 partitions at k = 12)
MAX_PERSISTENT_RELEASES = 12


@dataclass(frozen=True)
class PersistentPair:
    """The differing record at ``a`` against ``b`` (a missing entry read as ``na``), observed
    with probability ``q`` at each draw of its mask, in ``releases`` Gaussian releases of
    standard deviation ``sigma``, the mask kept between collections with probability
    ``persistence`` (r)."""

    a: float
    b: float
    na: float
    q: float
    sigma: float
    releases: int
    persistence: float

    def __post_init__(self) -> None:
        for name in ("a", "b", "na"):
            if not math.isfinite(float(getattr(self, name))):
                raise ValueError(f"{name} must be finite, got {name}={getattr(self, name)!r}")
        check_probability(self.q, "q")
        if not self.q > 0.0:
            raise ValueError(f"q must be in (0, 1] (a record that can be observed), got "
                             f"q={self.q!r}")
        check_positive(self.sigma, "sigma")
        check_probability(self.persistence, "persistence")
        k = self.releases
        if isinstance(k, bool) or not isinstance(k, int) \
                or not 1 <= k <= MAX_PERSISTENT_RELEASES:
            raise ValueError(f"releases must be an integer in [1, {MAX_PERSISTENT_RELEASES}] "
                             f"(the bound composes one PLD per partition of k), got "
                             f"releases={k!r}")
        if self.a == self.b:
            raise ValueError(f"a and b must differ (a pair of neighbours), got a = b = {self.a}")

    def epoch(self, length: int) -> tuple[Mixture, Mixture]:
        """The pair of one shared-mask epoch of ``length`` releases, in its sufficient
        statistic (the mean: one release at σ/√length)."""
        s = self.sigma / math.sqrt(length)
        w = np.array([1.0 - self.q, self.q])
        return (Mixture(w, np.array([self.na, self.a]), "gaussian", s),
                Mixture(w, np.array([self.na, self.b]), "gaussian", s))


@dataclass(frozen=True)
class PersistentBound:
    """The pair's ε at δ bracketed: ``epsilon`` an upper bound, ``lower`` a lower bound.
    ``boxes`` says whether the certified box bracket (2 ≤ k ≤ ``MAX_BOX_RELEASES``,
    :mod:`audit.theory.persistent_boxes`) was computed and intersected with the two ends;
    else the upper end is the epochs' mixture and the lower end the ε of the sum of the
    releases (a post-processing)."""

    epsilon: float
    lower: float
    boxes: bool = False

    @property
    def error(self) -> float:
        """The bracket's width: how far the upper bound may be above the pair's ε."""
        return self.epsilon - self.lower


def observed_counts(releases: int, q: float, persistence: float) -> np.ndarray:
    """The law of the number of collections (of k) that observe the record, its mask drawn
    observed with probability q and kept between collections with probability r (a forward
    recursion over the chain's two states)."""
    k, r = int(releases), float(persistence)
    stay_obs, stay_miss = r + (1 - r) * q, r + (1 - r) * (1 - q)
    # law[s, j]: P(state s at the current collection, j observed so far); s = 1 observed
    law = np.zeros((2, k + 1))
    law[1, 1], law[0, 0] = q, 1 - q
    for _ in range(k - 1):
        nxt = np.zeros_like(law)
        nxt[1, 1:] = law[1, :-1] * stay_obs + law[0, :-1] * (1 - r) * q
        nxt[0] = law[0] * stay_miss + law[1] * (1 - r) * (1 - q)
        law = nxt
    return law.sum(axis=0)


def epoch_partitions(releases: int, persistence: float) -> list[tuple[tuple[int, ...], float]]:
    """Every partition of k = ``releases`` into epoch lengths, with its probability when each
    collection after the first redraws the mask with probability 1 − r (module docstring);
    the probabilities sum to 1."""
    k, r = int(releases), float(persistence)
    out = []
    for parts in _partitions(k, k):
        m = len(parts)
        orders = math.factorial(m)
        for c in Counter(parts).values():
            orders //= math.factorial(c)
        prob = orders * (1.0 - r) ** (m - 1) * r ** (k - m)
        if prob > 0.0:
            out.append((parts, prob))
    return out


def _partitions(k: int, largest: int):
    """The partitions of k into parts of at most ``largest``, parts non-increasing."""
    if k == 0:
        yield ()
        return
    for first in range(min(k, largest), 0, -1):
        for rest in _partitions(k - first, first):
            yield (first, *rest)


def persistent_refusal(noise, releases: int, *, noise_name: str = "noise",
                       releases_name: str = "releases") -> str | None:
    """Why persistent masks cannot be accounted for this noise and k (the names are those the
    caller's user wrote), or None: Gaussian or Laplace noise (a Gaussian epoch is one release
    at σ/√ℓ; a Laplace epoch is bounded by :mod:`audit.theory.persistent_laplace`),
    k ≤ ``MAX_PERSISTENT_RELEASES`` (one PLD composition per partition of k)."""
    from audit.enums import NoiseKind

    NoiseKind.parse(noise, noise_name)  # a name that is no noise is refused here
    if isinstance(releases, bool) or not isinstance(releases, int) \
            or not 1 <= releases <= MAX_PERSISTENT_RELEASES:
        return (f"{releases_name} must be an integer in [1, {MAX_PERSISTENT_RELEASES}] for "
                f"persistent masks (the bound composes one PLD per partition of k), got "
                f"{releases_name}={releases!r}")
    return None


def epochs_epsilon(epoch_pld, releases: int, persistence: float, delta: float) -> float:
    """ε at δ of the mixture over the epoch partitions (module docstring) of the
    compositions of ``epoch_pld(length)``, each a pessimistic PLD."""
    d = check_delta(delta)
    epochs = {}
    mixture = []
    for parts, prob in epoch_partitions(releases, persistence):
        composed = None
        for length, count in Counter(parts).items():
            if length not in epochs:
                epochs[length] = epoch_pld(length)
            block = epochs[length] if count == 1 else epochs[length].self_compose(count)
            composed = block if composed is None else composed.compose(block)
        mixture.append((prob, composed))

    def excess(eps: float) -> float:
        return sum(p * pld.get_delta_for_epsilon(eps) for p, pld in mixture) - d

    if excess(0.0) <= 0.0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0.0:
        hi *= 2.0
        if hi > 1e4:
            return math.inf  # the infinite-loss mass alone exceeds δ
    return float(brentq(excess, 0.0, hi, xtol=1e-12))


def persistent_epsilon(pair: PersistentPair, delta: float, *,
                       discretization: float = DISCRETIZATION) -> float:
    """An upper bound on the ε at ``delta`` of the pair's k releases with persistent masks
    (module docstring): the mixture over the epoch partitions of the profiles of their
    compositions, each a pessimistic PLD; exact (to the PLD's rounding up) at persistence 0
    (fresh masks) and 1 (one shared mask).

    Raises
    ------
    ValueError
        On a parameter out of range (naming it).
    """
    from audit.theory.pld import pair_pmfs

    check_delta(delta)
    h = check_positive(discretization, "discretization")
    return epochs_epsilon(lambda length: pair_pmfs(*pair.epoch(length), h), pair.releases,
                            pair.persistence, delta)


def persistent_bound(pair: PersistentPair, delta: float, *,
                     discretization: float = DISCRETIZATION,
                     tolerance: float | None = None) -> PersistentBound:
    """The pair's ε at ``delta`` bracketed (module docstring): the upper end
    :func:`persistent_epsilon`, the lower end :func:`persistent_lower`; for
    2 ≤ k ≤ ``MAX_BOX_RELEASES`` and 0 < δ < 1, where they are further apart than
    ``tolerance`` (default: 0.5 % of ε, or 1e-3 if larger), both are tightened by the
    certified box bracket (:func:`audit.theory.persistent_boxes.box_bracket`), which refines
    until its width is at most ``tolerance`` (or its box or time budget is spent: the result
    is a bracket either way)."""
    from audit.theory.persistent_boxes import MAX_BOX_RELEASES, box_bracket

    d = check_delta(delta)
    if tolerance is not None:
        check_positive(tolerance, "tolerance")
    upper = persistent_epsilon(pair, d, discretization=discretization)
    lower = persistent_lower(pair, d, discretization=discretization)
    upper = max(upper, lower)
    tol = tolerance if tolerance is not None else (
        max(1e-3, 0.005 * upper) if math.isfinite(upper) else math.inf)
    if 2 <= pair.releases <= MAX_BOX_RELEASES and 0.0 < d < 1.0 and upper - lower > tol:
        box = box_bracket(pair, d, lower=lower, upper=upper, tolerance=tolerance)
        return PersistentBound(max(min(upper, box.upper), max(lower, box.lower)),
                               max(lower, box.lower), True)
    return PersistentBound(upper, lower)


def persistent_lower(pair: PersistentPair, delta: float, *,
                     discretization: float = DISCRETIZATION) -> float:
    """A certified lower bound on the pair's ε at ``delta``: the exact ε of the sum of the
    releases (its numerical low end), and at persistence 0 (fresh masks, where the sum is not
    sufficient) the fresh pair's own value
    (:func:`audit.theory.pair.releases.fresh_pair_epsilon`, its low end)."""
    from audit.theory.pair import pair_epsilon
    from audit.theory.pair.releases import fresh_pair_epsilon

    k = pair.releases
    w = observed_counts(k, pair.q, pair.persistence)
    j = np.arange(k + 1, dtype=np.float64)
    s = pair.sigma * math.sqrt(k)
    P = Mixture(w, j * pair.a + (k - j) * pair.na, "gaussian", s)
    Q = Mixture(w, j * pair.b + (k - j) * pair.na, "gaussian", s)
    low = pair_epsilon(P, Q, delta)
    lower = max(0.0, float(low.value) - float(low.error))
    if pair.persistence == 0.0 and k > 1:
        fresh = fresh_pair_epsilon(*pair.epoch(1), k, delta, discretization=discretization)
        lower = max(lower, float(fresh.value) - float(fresh.error))
    return lower


@lru_cache(maxsize=64)
def _epoch_envelope(pairs: tuple, length: int):
    """The pessimistic PLD of one shared-mask epoch of ``length`` releases dominating every
    pair of ``pairs`` ((a, b, na, q, σ) each) in both orders; it does not depend on the
    persistence, so a curve over r computes it once per length."""
    from audit.theory.pld import envelope_pld, pair_pmfs

    plds = [pair_pmfs(*PersistentPair(*p, 1, 0.0).epoch(length), DISCRETIZATION)
            for p in pairs]
    return plds[0] if len(plds) == 1 else envelope_pld(plds, DISCRETIZATION)


def persistent_envelope_epsilon(pairs, delta: float) -> float:
    """An upper bound on the ε at ``delta`` of every pair that each of ``pairs`` (the same
    k, q, σ and persistence) dominates in every epoch: the epochs' mixture (module docstring)
    of the pessimistic PLD of the envelope of their profiles at each epoch length
    (:func:`audit.theory.pld.envelope_pld`; the one pair's own PLD for one pair). Used by the
    setting's worst case with the corner lemma's candidate pairs (docs/THEORY.md §10.7)."""
    first = pairs[0]
    if any((p.q, p.sigma, p.releases, p.persistence) !=
           (first.q, first.sigma, first.releases, first.persistence) for p in pairs):
        raise ValueError("pairs must share q, sigma, releases and persistence, got "
                         f"pairs={pairs!r}")
    key = tuple((p.a, p.b, p.na, p.q, p.sigma) for p in pairs)
    return epochs_epsilon(lambda length: _epoch_envelope(key, length), first.releases,
                            first.persistence, check_delta(delta))
