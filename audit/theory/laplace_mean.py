"""A mean over the observed entries released with Laplace noise from one table, at δ > 0
(docs/THEORY.md §10.8, **derived in this project**): the count's loss as one more independent
variable of the grid expectations of :mod:`audit.theory.laplace_shared`, and the upper end over
every pair of two observed records on boxes."""

from __future__ import annotations

import math

from audit._validate import check_count, check_interval, check_positive
from audit.theory.laplace_shared import (
    CountLoss,
    _check_boxes_input,
    _first_target,
    _step_law,
    _sums,
)

__all__ = ["count_loss", "mean_upper"]

#: most grid points of the law of the count's k-release loss (its FFTs take about 80 bytes a
#: point): a coarser step beyond (k = 48 with k/b_N up to 700 stays below)
_MAX_COUNT_POINTS = 8_000_000


def count_loss(b_n: float, k: int, delta: float, *, step: float = 0.01) -> CountLoss:
    """The :class:`CountLoss` of k releases of a count with Laplace(``b_n``) noise: one
    release's Y is −1/b_N with probability 1/2 (y < 0) and else (2 min(y, 1) − 1)/b_N,
    y ~ Exp(b_N) (:func:`_step_law`); its k-fold sum moves by at most ``step`` each way (a
    larger step where the sum would pass ``_MAX_COUNT_POINTS`` points), then
    onto a grid of ``step`` (tails of at most 10⁻⁴δ moved to the edges or, for ``s_up``,
    dropped)."""
    from audit.theory.grid_expectation import GridLaw, coarsen

    b_n, k = check_positive(b_n, "b_n"), check_count(k, "k")
    step = max(step, 2 * k * k / (b_n * _MAX_COUNT_POINTS))
    n = max(int(math.ceil(2 * k / (b_n * step))), 1)
    grid, up, down = _step_law(1.0, b_n, n)
    up, down = 0.5 * up, 0.5 * down
    up[0] += 0.5  # the atom at −1/b_N (y < 0), exactly on the grid
    down[0] += 0.5
    y_up, y_down = _sums(grid, (up, down), k, (True, False), last=True)

    def reflected(law):  # s = −Y, weighted by e^Y: masses and tilted masses swap
        return GridLaw(-law.points[::-1], law.tilted[::-1], law.masses[::-1])

    s_down, s_up = reflected(y_up), reflected(y_down)
    if s_down.points.size > 1:
        s_down = coarsen(s_down, False, step, 1e-4 * delta)
        s_up = coarsen(s_up, True, step, 1e-4 * delta)
    return CountLoss(s_down, s_up, k / b_n)


def mean_upper(lo: float, hi: float, q: float, b: float, k: int, delta: float, floor: float,
               count: CountLoss, *, above: float = 0.0, targets=(1e-3, 2.5e-3, 5e-3, 1e-2),
               step: float = 0.01, budget: int = 80) -> float | None:
    """A certified upper end at δ > 0 over every pair of two observed records c, c′ ∈ [lo, hi]
    of k releases of a mean over the observed entries with Laplace noise, one table (docs/
    THEORY.md §10.8): the sum's noise scale ``b``, the count's loss ``count``; the first of
    floor·(1 + r), r in ``targets`` (those above ``above``), that
    :func:`audit.theory.laplace_shared._side_holds` certifies on each side of 0 the domain
    reaches, or None. Pairs with the missing record are
    not covered (their closed form is the caller's).

    The reduction of :func:`shared_upper` holds at every output of the sum and the count: the
    denominator's density 1 − q + q e^{Y + w(c′)} is at least the smaller of its values at c
    and at the end beyond c′, so c′ ∈ {lo, hi}; on boxes of c the integrand rises with Y and
    with u, and the count's loss enters as s = −Y (:class:`CountLoss`).

    Raises
    ------
    ValueError
        Unless 0 < δ < 1 and k ≤ ``MAX_OPPOSITE_RELEASES``.
    """
    lo, hi = check_interval((lo, hi), "domain")
    _check_boxes_input(k, delta, "a mean's upper end at delta > 0")
    sides = []
    if hi > 0.0:
        sides.append((lo, hi))
    if lo < 0.0 and hi != -lo:  # the mirror image x -> -x (the count is unchanged)
        sides.append((-hi, -lo))
    return _first_target(sides, 0.0, q, b, k, delta, floor, above, targets, step, budget, count)
