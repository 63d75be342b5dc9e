"""The NaN table's verdict rule, shared by its adapter rows (``experiments/nan_regression.py``)
and its reported findings (``experiments/nan_findings.py``).

``violates``: ε_lower > the claim at :data:`CONFIDENCE`; ``keeps``: ε_lower ≤ the claim and
the region's estimate ε̂ ≤ :data:`MARGIN` × the claim; ``borderline``: neither (the module
docstring of ``experiments/nan_regression.py`` says what each means between reruns).
"""

from __future__ import annotations

import math

__all__ = ["CONFIDENCE", "MARGIN", "estimate", "verdict", "combined"]

CONFIDENCE = 0.99
MARGIN = 0.9


def estimate(witness: dict) -> float | None:
    """The verdict's point: the region's ε estimated with Jeffreys' half counts,
    ln(((k_num + ½)/(n_num + 1) − δ)/((k_den + ½)/(n_den + 1))), NOT a bound (None for a
    witness without a region's counts).

    The plain plug-in ln((k_num/n_num − δ)/(k_den/n_den)) of a region the attack chose where
    it found nothing rests on a handful of calls (1 against 3 of 4,000), and it crossed the
    margin in one of three reruns of python-dp's ``median``, ``min`` and ``percentile`` while
    every ε_lower was 0. Half a count on each side moves a region of thousands of calls by
    less than 10⁻³ and keeps a region of a few calls near 0, where it carries no evidence
    either way; a region of 0 denominator calls is finite, so 5 against 0 reads 2.4, not ∞.
    """
    if not isinstance(witness, dict) or witness.get("kind", "region") != "region" \
            or "k_p" not in witness:
        return None
    counts = (witness["k_p"], witness["n_p"], witness["k_q"], witness["n_q"])
    if witness["direction"] != "z_vs_zprime":
        counts = counts[2:] + counts[:2]
    k_num, n_num, k_den, n_den = counts
    num = (k_num + 0.5) / (n_num + 1) - float(witness.get("delta", 0.0))
    return math.log(num / ((k_den + 0.5) / (n_den + 1))) if num > 0 else 0.0

def verdict(eps_lower: float, eps_estimate: float | None, claim: float) -> str:
    """``violates`` / ``keeps`` / ``borderline`` (module docstring); ``eps_estimate`` the
    region's :func:`estimate`."""
    if eps_lower > claim:
        return "violates"
    if eps_estimate is not None and eps_estimate <= MARGIN * claim:
        return "keeps"
    return "borderline"

def combined(verdicts: list[str], nan: str | None = None) -> str:
    """The verdict of a row audited several times: the runs' common verdict, else
    ``borderline`` (the runs disagree: the row is not decided); a violation by a NaN the
    library's declared domain excludes (``nan`` = ``unchecked``) is ``contract``: the claim
    fails, but outside the guarantee the library states, by the caller's breach."""
    decided = verdicts[0] if len(set(verdicts)) == 1 else "borderline"
    return "contract" if decided == "violates" and nan == "unchecked" else decided

