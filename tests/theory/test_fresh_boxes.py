"""The fresh-mask branch and bound over boxes of pairs (docs/THEORY.md §10.4)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.theory.fresh_boxes import _Law, _order_bound, box_profile, fresh_boxes
from audit.theory.pair.hockey import hockey

NOISES = [NoiseKind.LAPLACE, NoiseKind.GAUSSIAN]


def _exact(law: _Law, a: float, b: float, gam: np.ndarray) -> np.ndarray:
    """The integrator's certified lower end of D_γ(P_a ‖ P_b), per γ."""
    P = Mixture([1 - law.q, law.q], [law.m, a], law.noise, law.scale)
    Q = Mixture([1 - law.q, law.q], [law.m, b], law.noise, law.scale)
    out = []
    for g in gam:
        h = hockey(P, Q, float(math.log(g)))
        out.append(h.value - h.error)
    return np.array(out)


@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("scale, q, m, A, B", [
    (0.1, 0.5, 0.0, (0.2, 0.7), (0.9, 0.9)),  # the optimal set inside A: the chord's excess
    (0.3, 0.5, 0.0, (0.2, 0.7), (0.9, 1.0)),
    (0.5, 0.8, 1.0, (0.0, 0.6), (0.3, 0.3)),  # NA's reading at an end of A's side
    (1.0, 0.1, 0.4, (0.0, 1.0), (0.0, 1.0)),  # a box holding the diagonal
])
def test_a_box_bound_is_above_every_pair_of_the_box(noise, scale, q, m, A, B):
    """At every γ ≥ 1 the bound is at or above the certified D_γ of 21 × 3 pairs of the box
    (both ends included). Without the chord's excess (the Laplace kernel's flat top on A,
    the Gaussian e^{h²/8σ²}) the first two settings fail by 0.02–0.33."""
    law = _Law(noise, scale, m, q)
    gam = np.exp(np.linspace(0.0, 4.0, 41))
    bound = _order_bound(law, A, B, gam)
    for a in np.linspace(*A, 21):
        for b in np.linspace(*B, 3):
            assert np.all(_exact(law, a, b, gam) <= bound), (a, b)


@pytest.mark.parametrize("noise", NOISES)
def test_a_box_of_one_pair_is_that_pair(noise):
    """Shrunk to a point, the bound is the pair's own D_γ (the chord has no excess), to 1e-9."""
    law = _Law(noise, 0.4, 0.0, 0.3)
    gam = np.exp(np.linspace(0.0, 3.0, 13))
    for a, b in [(1.0, 0.0), (0.0, 1.0), (0.7, 0.2)]:
        bound = _order_bound(law, (a, a), (b, b), gam)
        assert np.max(np.abs(bound - _exact(law, a, b, gam))) <= 1e-9


def test_the_profile_below_zero_is_the_reverse_order_conjugate():
    law = _Law(NoiseKind.LAPLACE, 1.0, 0.0, 0.2)
    A, B = (0.5, 1.0), (0.0, 0.25)
    idx, d = box_profile(law, A, B, top=0.5, h=0.01)
    eps = idx * 0.01
    gam = np.exp(eps[eps > 0])
    rev = _order_bound(law, B, A, gam)
    assert np.allclose(d[eps < 0][::-1], 1 - 1 / gam + rev / gam, rtol=0, atol=1e-15)
    assert np.all(d[eps >= 0.5] == 0.0) and np.all((d >= 0.0) & (d <= 1.0))


@pytest.mark.parametrize("noise, scale", [("laplace", 1.0), ("gaussian", 2.0)])
def test_boxes_bound_interior_pairs_and_close_on_the_count_like_domain(noise, scale):
    """The boxes' upper end is at or above the exact ε (both orders composed) of 8 random
    pairs of two observed records, and it closes on the remove/add pair's value: within 0.5 %
    of it (the envelope of the candidates was 13 % and 8.7 % above)."""
    from audit.theory.pair.releases import fresh_pair_epsilon

    q, k, delta = 0.1, 10, 1e-5
    top = math.log1p(q * math.expm1(1.0 / scale)) if noise == "laplace" else None
    res = fresh_boxes(noise, scale, (0.0, 1.0), 0.0, q, k, delta, 0.0, top=top, budget=6.0)
    rng = np.random.default_rng(7)
    nk = NoiseKind.parse(noise, "noise")
    law = lambda c: Mixture([1 - q, q], [0.0, c], nk, scale)  # noqa: E731
    worst = fresh_pair_epsilon(law(1.0), Mixture([1.0], [0.0], nk, scale), k, delta)
    assert res.upper >= worst.value + worst.error
    assert res.upper <= 1.005 * (worst.value - worst.error)
    for c, c2 in rng.uniform(0.0, 1.0, size=(8, 2)):
        v = fresh_pair_epsilon(law(float(c)), law(float(c2)), k, delta)
        assert v.value - v.error <= res.upper


def test_the_search_stops_at_its_target_and_its_budget():
    args = ("laplace", 1.0, (0.0, 1.0), 0.0, 0.1, 10, 1e-5)
    top = math.log1p(0.1 * math.expm1(1.0))
    loose = fresh_boxes(*args, 10.0, top=top)
    assert loose.closed and loose.boxes == 1  # the first box is below a loose target
    stopped = fresh_boxes(*args, 0.0, top=top, budget=0.0)
    assert not stopped.closed and stopped.upper >= loose.upper - 1e-12
    assert "time budget" in stopped.describe() and "below the target" in loose.describe()


def test_a_gaussian_loss_beyond_the_float_range_gives_no_bound():
    """σ = 0.01 on [0, 1]: one release's loss passes e^700 on every box tried (they are
    halved while the budget lasts: narrower boxes have a smaller chord excess)."""
    res = fresh_boxes("gaussian", 0.01, (0.0, 1.0), 0.0, 0.5, 2, 1e-5, 1.0, budget=2.0)
    assert res.upper == math.inf and not res.closed and res.boxes > 2


@pytest.mark.parametrize("na, boxes", [(0.3, range(4, 40)), (2.0, range(1, 2))])
def test_the_worst_case_closes_with_the_missing_reading_inside_and_outside(na, boxes):
    """A Laplace sum over [0, 1], q = 0.1, k = 10: NA read inside the domain (four boxes to
    start, split at the reading) or outside (one box, far below the pairs with the missing
    record). The row is exact, within 0.5 % of the worst candidate pair, and above the exact
    ε of pairs across the reading and of pairs with the missing record inside the domain."""
    from audit.theory.pair.releases import fresh_pair_epsilon
    from audit.theory.worst_case import Setting, worst_case

    s = Setting("laplace", 1.0, (0.0, 1.0), na, 0.1, 10, "fresh")
    w = worst_case(s, 1e-5)
    assert w.exact and w.lower <= w.epsilon <= 1.005 * w.lower
    assert int(re.search(r"over (\d+) boxes", w.method).group(1)) in boxes  # measured: 12, 1
    for c, c2 in [(0.9, 0.1), (0.05, 0.7), (0.6, None), (None, 0.2)]:
        v = fresh_pair_epsilon(s.law(c), s.law(c2), 10, 1e-5)
        assert v.value - v.error <= w.epsilon


@pytest.mark.parametrize("kwargs, name", [
    ({"scale": 0.0}, "scale"), ({"domain": (1.0, 0.0)}, "domain"),
    ({"na_value": math.nan}, "na_value"), ({"q": 0.0}, "q"), ({"q": 1.5}, "q"),
    ({"releases": 0}, "releases"), ({"delta": 0.0}, "delta"), ({"delta": 2.0}, "delta"),
    ({"target": math.inf}, "target"), ({"discretization": 0.0}, "discretization"),
    ({"budget": -1.0}, "budget"), ({"budget": math.inf}, "budget"), ({"top": None}, "top"),
    ({"top": -1.0}, "top"), ({"noise": "gaussian"}, "top"), ({"noise": "cauchy"}, "noise"),
])
def test_bad_input_is_refused_naming_the_parameter(kwargs, name):
    args = {"noise": "laplace", "scale": 1.0, "domain": (0.0, 1.0), "na_value": 0.0,
            "q": 0.1, "releases": 2, "delta": 1e-5, "target": 1.0, "top": 0.2, **kwargs}
    with pytest.raises(ValueError, match=name):
        fresh_boxes(**args)
