"""The one rule by which a choice predicts the main run's bound.

Every choice made for the main run compares candidates by the bound the main run is predicted
to give: a region's threshold, direction and bound rule
(:func:`audit.estimation.regions.select_region_on_pilot`,
:func:`audit.estimation.regions.select_region_by_model`), a mask-stratified audit's regions
and side designs (:mod:`audit.estimation.strata_regions`,
:mod:`audit.estimation.strata_designs`), and a curve claim's region
(:mod:`audit.estimation.curve_claims`). All of them predict by one rule, in two steps:

1. **The masses.** A region's mass on each side is known exactly (the model's choice) or read
   off a pilot's counts. A mass the bound needs **large** (the numerator of ε; a curve
   claim's 1 − FNR) is taken at its one-sided Clopper–Pearson lower bound at
   ``guard_alpha`` / 2 (:func:`large_mass`), so that a tail region the pilot saw a few times
   is not taken for a sure one (the winner's curse of a maximum over thousands of
   candidates). A mass the bound needs **small** (the denominator; a curve claim's FPR) is
   taken at its frequency plus the mass one of the numerator's pilot hits stands for
   (:func:`small_mass`, :func:`resolution`): on a plain pilot of n calls k/n + 1/n =
   (k + 1)/n; on a stratified one, a hit in a stratum of weight w sampled m times stands for
   w/m.
2. **The counts.** The main run's expected count of every mass it bounds, calls × mass, is
   moved ``pessimism_sd`` standard deviations (√ of the expected count) against the bound
   (:func:`expected_count`), and bounded as the main run's own bound will bound it
   (fractional counts: :func:`audit.estimation.binomial.cp_lower_array`).

Why the denominator's pseudo-count is one numerator hit. A region just beyond the last
denominator call of a pilot of n has an expected denominator mass of about 1/n (the gap
above the largest of n draws), which a frequency of 0 hides: taken at 0, curve claims of
μ-GDP Gaussians at μ = 2 fall from 0.988 to 0.923 of the true ε (the region lands in a tail
the main run sees ~20 times). A pseudo-call at the pilot's own scale, 1/n, instead rules out
an event that a stratified main run measures far below it: diffprivlib's NaN-propagating
``mean`` at π = 0.3 on 20 entries releases a number only in its fully observed stratum, of
mass 8·10⁻⁴, and never on the other side; 1/n of 1,000 pilot calls predicts no bound, while
the stratified main run refutes the claim. One numerator hit is 1/n on a plain pilot and
1.7·10⁻⁵ there (48 hits in a stratum of weight 8·10⁻⁴): the resolution at which the
numerator was measured. A guard on the denominator at the pilot's scale (its upper bound at
``guard_alpha`` / 2, about 8 pseudo-calls at zero) costs the tester benchmark's
ReportNoisyMax4 0.28 of its 0.51 (12 seeds).

The designs of a mask-stratified audit (which sides are stratified, a plain side's calls per
rate) are chosen for regions already fixed, so step 1 reads their masses at the pilot's
frequencies: there is no maximum over regions for the numerator's guard to correct, and with
guarded masses the design moved calls away from rates the guard predicted at 0 (diffprivlib's
``nansum`` at π = 0.7: 0.153 → 0.030 over 8 seeds). Step 2 is theirs too
(:func:`audit.estimation.strata.predicted_side_bounds`).

Every choice is a function of the pilot (or of the exact laws) alone, so it costs the main
run's bound nothing.
"""

from __future__ import annotations

import numpy as np

from audit.estimation.binomial import SIDES, check_alpha, cp_lower_array
from audit.policy import DEFAULT_POLICY

__all__ = ["large_mass", "small_mass", "resolution", "expected_count"]


def large_mass(k, n, guard_alpha: float) -> np.ndarray:
    """A mass the bound needs large, from ``k`` of ``n`` pilot calls (arrays; fractional
    effective counts allowed): the one-sided Clopper–Pearson lower bound at ``guard_alpha``
    / 2 (0 where k ≤ 0)."""
    return cp_lower_array(np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64),
                          check_alpha(guard_alpha) / SIDES)


def small_mass(k, n, resolution) -> np.ndarray:
    """A mass the bound needs small, from ``k`` of ``n`` pilot calls: its frequency k/n plus
    ``resolution``, the mass one of the numerator's pilot hits stands for
    (:func:`resolution`), at most 1."""
    k = np.asarray(k, dtype=np.float64)
    return np.minimum(k / np.asarray(n, dtype=np.float64) + np.asarray(resolution), 1.0)


def resolution(mass, hits, worth) -> np.ndarray:
    """The mass one pilot hit of the numerator stands for: ``mass`` / ``hits`` (the numerator's
    frequency over its hits: 1/n on a plain pilot of n calls; a hit in a stratum of weight w
    sampled m times stands for w/m), or ``worth`` (one call's) where it has none."""
    mass, hits = np.asarray(mass, dtype=np.float64), np.asarray(hits, dtype=np.float64)
    return np.where(hits > 0, mass / np.where(hits > 0, hits, 1.0), worth)


def expected_count(mass, calls, pessimism_sd: float | None, *, large: bool) -> np.ndarray:
    """The main run's count of a region of ``mass`` in ``calls`` calls, as the prediction
    takes it: the expectation moved ``pessimism_sd`` · √(expectation) down when the bound
    needs it ``large``, up when it needs it small, within [0, calls]. ``pessimism_sd=None``:
    ``DEFAULT_POLICY``'s (the one place a caller without a policy gets it)."""
    if pessimism_sd is None:
        pessimism_sd = DEFAULT_POLICY.pessimism_sd
    calls = np.asarray(calls, dtype=np.float64)
    mean = np.asarray(mass, dtype=np.float64) * calls
    move = pessimism_sd * np.sqrt(np.clip(mean, 0.0, None))
    return np.clip(mean - move if large else mean + move, 0.0, calls)
