"""How many releases a trial makes, as one part: one release, or k from one table.

The plan of a model audit and of an implementation audit ask the release design of their
config (:func:`releases_of`) what k releases change, instead of branching on ``[releases]``
themselves:

- :class:`OneRelease` (no ``[releases]`` table): the release is audited as it is; its theory
  is the applicable [RPS] theorem and its f-DP curve (docs/THEORY.md §4–7);
- :class:`KReleases` (``[releases] count, masks``): k releases per trial from one masked table
  (shared masks) or each from a table masked anew (fresh masks), docs/THEORY.md §9. The
  model's laws are the mixture over the masks of k-fold products (shared) or the k-fold
  product (fresh), except where k Gaussian releases with shared masks are exactly one release
  at σ/√k (the mean is sufficient: §9.2); the theory is Proposition 9.1 or 9.2; an
  implementation is called k times per trial (:class:`audit.model.repeated.RepeatedReleases`).
  With ``masks = "persistent"`` (``persistence`` = r, the model only) the laws are the
  mixture over the record's mask paths, a Markov chain that keeps the mask with probability r
  (:func:`audit.laws.persistent_releases`); no theorem-level row holds, and the audited pair's
  bracket (docs/THEORY.md §10.7) is its ceiling.

Which combinations a k-release audit supports is :class:`audit.pipeline.parts.RepeatedDesign`'s
answer; this module only says what the design computes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audit.enums import MaskRegime, MissingnessClass, NoiseKind
from audit.laws import fresh_releases, persistent_releases, shared_releases
from audit.model.release import Release
from audit.noise import noise_of
from audit.pipeline.ceilings import Comparison
from audit.theory import accountant as acc
from audit.theory.noise_theory import theory_of
from audit.theory.pair import pair_epsilon
from audit.theory.pld import MAX_PLD_RELEASES

__all__ = ["OneRelease", "KReleases", "releases_of"]

#: the method string of an exact ε of the audited pair
_EXACT = "exact privacy of the audited pair"


@dataclass(frozen=True)
class OneRelease:
    """One release per trial (no ``[releases]`` table)."""

    noise: str

    count = 1
    #: whether k releases are exactly one release at scale/√k (:class:`KReleases`)
    reduces_to_one = False

    def law_release(self, release: Release) -> Release:
        """The release the pair's laws are drawn with."""
        return release

    def laws(self, P, Q):
        """The laws of a trial's outputs, from one release's laws (P, Q)."""
        return P, Q

    @property
    def single(self) -> bool:
        """Whether a trial's laws are one release's laws (its f-DP curve applies)."""
        return True

    def pair_epsilon(self, P, Q, delta: float) -> tuple[float | None, float | None, str]:
        """ε of the audited pair at ``delta``, its numerical error and its method."""
        if not P.is_scalar:
            return None, None, "no exact value for a vector release"
        value = pair_epsilon(P, Q, delta)
        return float(value.value), float(value.error), _EXACT

    def theory(self, curve, p_star: float, delta: float, mclass: MissingnessClass, rps
               ) -> tuple[str, float | None, Comparison | None]:
        """(name, ε, comparison) of the theory row: ``rps``, the [RPS] theorem's (name, ε)
        already evaluated for one release (``curve``, a function giving the per-release
        curve, unused)."""
        name, value = rps
        return name, value, None

    def base_epsilon(self, epsilon: float, mu: float, scalar: bool, delta: float) -> float:
        """ε at ``delta`` of the base mechanism (no missingness) on complete neighbours."""
        return float(theory_of(self.noise).base_epsilon(epsilon, mu, delta))

    def implementation(self, impl, mech):
        """(what the sampler calls, what it masks with)."""
        return impl, mech

    def amplified(self, impl, p_star: float) -> tuple[float, str]:
        """The implementation's claim amplified by the missingness, and the rule's name."""
        c = impl.claim
        return (float(acc.amplify(c.epsilon, c.delta, p_star)[0]),
                f"the claim amplified by RPS Theorem 3.2 (p* = {p_star:.4g})")

    def comparison(self, impl, p_star: float, mclass: MissingnessClass) -> Comparison | None:
        """What accounting per release would say (k releases with shared masks only)."""
        return None


@dataclass(frozen=True)
class KReleases(OneRelease):
    """k releases per trial from one table, with shared or fresh masks, or from data
    re-collected k times whose non-response persists (``persistence`` = r: persistent
    masks, docs/THEORY.md §10.7)."""

    count: int = 1
    masks: MaskRegime = MaskRegime.SHARED
    persistence: float | None = None

    @property
    def reduces_to_one(self) -> bool:
        """k releases with shared masks under a noise whose mean is sufficient (Gaussian) are
        exactly one release at scale/√k (docs/THEORY.md §9.2)."""
        return self.masks is MaskRegime.SHARED and noise_of(self.noise).mean_is_sufficient

    @property
    def single(self) -> bool:
        return self.count == 1 or self.reduces_to_one

    def law_release(self, release: Release) -> Release:
        """σ/√k where the k releases reduce to one, else the release itself."""
        if not self.reduces_to_one:
            return release
        return Release(release.noise, release.scale / math.sqrt(self.count))

    def laws(self, P, Q):
        """The k outputs' laws: the single-release laws where k = 1 or they reduce to one;
        else the mixture over the masks of k-fold products (shared,
        :func:`audit.laws.shared_releases`) or the k-fold product (fresh,
        :func:`audit.laws.fresh_releases`), audited by their exact likelihood ratio."""
        if self.single:
            return P, Q
        build = {MaskRegime.SHARED: shared_releases, MaskRegime.FRESH: fresh_releases,
                 MaskRegime.PERSISTENT: self._persistent}[self.masks]
        try:
            return build(P, self.count), build(Q, self.count)
        except ValueError as e:
            raise ValueError(
                f"releases: the model cannot audit {self.count} releases with "
                f"{self.masks.value} masks of this release ({e}); lower releases.count, or "
                "audit it as an implementation with [releases]") from None

    def _persistent(self, M, releases: int):
        """The law of k releases with persistent masks
        (:func:`audit.laws.persistent_releases`)."""
        return persistent_releases(M, releases, self.persistence)

    def pair_epsilon(self, P, Q, delta: float) -> tuple[float | None, float | None, str]:
        """ε over the k releases of the single-release pair (P, Q), with its method; with
        persistent masks the midpoint and half-width of the pair's bracket
        (:func:`audit.theory.persistent.persistent_bound`)."""
        if self.single:  # (P, Q) are the releases
            return super().pair_epsilon(P, Q, delta)
        if not P.is_scalar:
            return None, None, "no exact value for k releases of a vector release"
        if self.masks is MaskRegime.PERSISTENT:
            return _persistent_pair_epsilon(P, Q, self.count, self.persistence, delta)
        value, method = acc.releases_pair_epsilon(P, Q, self.count, delta, self.masks)
        if value is None:
            return None, None, method
        return float(value.value), float(value.error), f"exact privacy of the pair: {method}"

    def theory(self, curve, p_star: float, delta: float, mclass: MissingnessClass, rps
               ) -> tuple[str, float | None, Comparison | None]:
        """Proposition 9.1 (shared masks: C_p* of the k-fold composition of the per-release
        curve ``curve()``) or 9.2 (fresh masks: C_p*(f) composed k times); with shared masks,
        the per-release accounting (what 9.2 would say) as a comparison, NOT a bound."""
        if mclass is MissingnessClass.MNAR:
            return "no theorem (MNAR)", None, None
        if self.masks is MaskRegime.PERSISTENT:
            return ("no theorem-level bound for persistent masks (docs/THEORY.md §10.7): the "
                    "audited pair's bracket is the ceiling", None, None)
        curve = curve()
        k, shared = self.count, self.masks is MaskRegime.SHARED
        bound = acc.releases_epsilon(curve, p_star, k, delta, self.masks)
        name = (f"Proposition 9.{1 if shared else 2} ({self.masks.value} masks, k = {k}): "
                f"{bound.rule}")
        if not shared or k > MAX_PLD_RELEASES:
            return name, float(bound.epsilon), None
        fresh = acc.fresh_masks_epsilon(curve, p_star, k, delta)
        return name, float(bound.epsilon), Comparison(
            float(fresh), "C_p*(f) composed k times by PLD: the per-release accounting")

    def base_epsilon(self, epsilon: float, mu: float, scalar: bool, delta: float) -> float:
        """The base mechanism's curve composed k times
        (:func:`audit.theory.accountant.composed_epsilon`)."""
        curve = theory_of(self.noise).base_curve(mu, scalar)
        return float(acc.composed_epsilon(curve, self.count, delta).epsilon)

    def implementation(self, impl, mech):
        """k calls per trial (:class:`audit.model.repeated.RepeatedReleases`); under fresh
        masks the implementation masks each call itself, so the sampler masks nothing."""
        from audit.model.missingness import make_missingness
        from audit.model.repeated import RepeatedReleases

        impl = RepeatedReleases(impl, self.count, self.masks, mech)
        if impl.masks is MaskRegime.SHARED:
            return impl, mech
        return impl, make_missingness("mcar-iid", rate=0.0)

    def amplified(self, impl, p_star: float) -> tuple[float, str]:
        """The k-release claim amplified: [RPS] Theorem 3.2 once on the composition (shared
        masks) or per release, then composed (fresh masks)."""
        how = ("once, on the composition: shared masks)" if self.masks is MaskRegime.SHARED
               else "per release, then composed: fresh masks)")
        return (float(impl.amplified(p_star)[0]),
                f"the {self.count}-release claim amplified by RPS Theorem 3.2 (p* = "
                f"{p_star:.4g}; " + how)

    def comparison(self, impl, p_star: float, mclass: MissingnessClass) -> Comparison | None:
        """For shared masks: the per-release amplified claim composed k times as if the
        masks were fresh. NOT a bound for shared masks (docs/THEORY.md §9): an ε_lower above
        it refutes that accounting."""
        if self.masks is not MaskRegime.SHARED or mclass is MissingnessClass.MNAR:
            return None
        c, k = impl.inner.claim, impl.count
        if c.delta == 0.0:  # pure DP: the k-fold composition of ln(1 + p*(e^ε − 1)), exact
            value = impl.amplified(p_star, MaskRegime.FRESH)[0]
            rule = "k x ln(1 + p*(e^eps - 1)): per-release amplification composed (pure DP)"
        else:  # the amplified (ε', p*δ) composed optimally, at the k-release δ
            eps1, delta1 = acc.amplify(c.epsilon, c.delta, p_star)
            value = acc.optimal_composition(eps1, delta1, k, min(1.0, k * c.delta))
            if not np.isfinite(value):
                return None
            rule = ("the per-release amplified claim (eps', p* delta) composed k times "
                    "optimally (Kairouz-Oh-Viswanath), at the k-release delta")
        return Comparison(float(value), rule,
                          "not a bound for shared masks: the per-release accounting")


def releases_of(cfg) -> OneRelease:
    """The release design of ``cfg``: :class:`KReleases` with a ``[releases]`` table, else
    :class:`OneRelease`."""
    noise = cfg.scenario.noise
    rel = cfg.releases
    if rel is None:
        return OneRelease(noise)
    return KReleases(noise, rel.count, rel.masks, rel.persistence)


def _persistent_pair_epsilon(P, Q, releases: int, persistence: float, delta: float
                             ) -> tuple[float | None, float | None, str]:
    """(midpoint, half-width, method) of the bracket of the audited pair over k releases
    with persistent masks, from its record-level form (the record observed with probability
    q, else contributing 0)."""
    from audit.theory.pair.releases import record_level_form
    from audit.theory.persistent import PersistentPair, persistent_bound

    form = record_level_form(P, Q, 1)
    if form is None:
        return None, None, "no bracket: the pair is not a record-level pair"
    a, b = float(form.contributions[0]), float(form.contributions_prime[0])
    if P.noise is NoiseKind.LAPLACE:
        return _persistent_laplace_pair(a, b, form.observation, P.scale, releases,
                                        persistence, delta)
    pair = PersistentPair(a, b, 0.0, form.observation, P.scale, releases, persistence)
    b = persistent_bound(pair, delta)
    how = ("the redraw epochs' mixture and the sum of the releases, tightened by the "
           "certified box bracket" if b.boxes else
           "the redraw epochs' mixture above, the sum of the releases below")
    return ((b.epsilon + b.lower) / 2, b.error / 2,
            f"bracket of the pair (persistent masks, r = {persistence:g}): {how} "
            "(docs/THEORY.md §10.7)")


def _persistent_laplace_pair(a: float, b: float, q: float, scale: float, releases: int,
                             persistence: float, delta: float
                             ) -> tuple[float | None, float | None, str]:
    """The Laplace pair's bracket (docs/THEORY.md §10.7): above, the epochs' bound over the
    domain [min(a, b), max(a, b)] with the missing entry read as 0, which holds the pair;
    below, the sum of its one-release losses."""
    from audit.theory.persistent_laplace import persistent_laplace_upper, sum_loss_lower

    lower = sum_loss_lower(a, b, 0.0, q, scale, releases, persistence, delta)
    upper = max(lower, persistent_laplace_upper(min(a, b), max(a, b), 0.0, q, scale, releases,
                                                persistence, delta))
    return ((upper + lower) / 2, (upper - lower) / 2,
            f"bracket of the pair (persistent masks, r = {persistence:g}): the redraw epochs' "
            "mixture of the domain's bound above, the sum of the losses below "
            "(docs/THEORY.md §10.7)")
