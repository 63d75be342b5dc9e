"""Tests for audit.statistics: projections, the engine's bin layout and its numpy reference.

Oracles: ``numpy.histogram`` for the interior bins and counts by hand for the underflow,
overflow and NaN bins; scipy's Laplace and normal log-densities for the exact LLR.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from audit.mixture import Mixture
from audit.statistics import (
    ExactLLR,
    LinearProjection,
    OutputValue,
    Statistic,
    bin_indices,
    bin_representatives,
    check_edges,
    edges_spanning,
    histogram,
)

EDGES = np.array([-1.0, 0.0, 0.5, 2.0])


def test_histogram_layout_against_numpy_and_by_hand():
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.normal(size=500), [-np.inf, np.inf, np.nan, np.nan, -1.0, 2.0]])
    got = histogram(v, EDGES)
    assert got.shape == (len(EDGES) + 2,) and got.dtype == np.int64
    finite = v[np.isfinite(v)]
    inner, _ = np.histogram(finite[(finite >= -1.0) & (finite < 2.0)], bins=EDGES)
    assert got[1:len(EDGES)].tolist() == inner.tolist()
    assert got[0] == np.sum(v < -1.0)  # −inf included
    assert got[len(EDGES)] == np.sum(v >= 2.0)  # +inf and the edge 2.0 included
    assert got[-1] == 2 and got.sum() == v.size


def test_bins_are_left_closed():
    assert bin_indices(np.array([-1.0, 0.0, 0.4999, 0.5, 2.0, -1.0001, np.nan]), EDGES).tolist() \
        == [1, 2, 2, 3, 4, 0, 5]


def test_bin_representatives():
    rep = bin_representatives(EDGES)
    assert rep[:-1].tolist() == [-1.0, -0.5, 0.25, 1.25, 2.0] and math.isnan(rep[-1])
    # the centres fall in their own bins, the overflow edge in the overflow bin, NaN in the NaN
    # bin; the underflow bin is represented by edges[0], the left end of the first bin
    assert bin_indices(rep, EDGES).tolist() == [1, 1, 2, 3, 4, 5]


@pytest.mark.parametrize(("noise", "law"), [("laplace", stats.laplace), ("gaussian", stats.norm)])
def test_exact_llr_matches_scipy(noise, law):
    P = Mixture(np.array([0.4, 0.6]), np.array([0.0, 1.0]), noise, 0.8)
    Q = Mixture(np.array([1.0]), np.array([0.0]), noise, 0.8)
    x = np.linspace(-3.0, 4.0, 29)
    want = np.log(0.4 * law.pdf(x, 0.0, 0.8) + 0.6 * law.pdf(x, 1.0, 0.8)) \
        - law.logpdf(x, 0.0, 0.8)
    assert np.allclose(ExactLLR(P, Q).evaluate(x), want, rtol=1e-12, atol=1e-12)
    stat = Statistic.llr(P, Q, EDGES)
    assert np.array_equal(stat.counts(x), histogram(want, EDGES))


def test_exact_llr_describes_its_laws_by_digest():
    P = Mixture(np.array([1.0]), np.array([1.0]), "laplace", 1.0)
    Q = Mixture(np.array([1.0]), np.array([0.0]), "laplace", 1.0)
    d = ExactLLR(P, Q).to_dict()
    assert d["kind"] == "llr" and d["noise"] == "laplace" and d["law_types"] == ["Mixture"] * 2
    assert d == ExactLLR(P, Q).to_dict()  # deterministic
    assert d["laws"] != ExactLLR(Q, P).to_dict()["laws"]  # the order of the laws counts


def test_linear_projection_and_output_value_by_hand():
    x = np.array([[1.0, 2.0], [0.5, -1.0]])
    proj = LinearProjection([2.0, -1.0], 0.5)
    assert proj.evaluate(x).tolist() == [0.5, 2.5]
    assert LinearProjection([3.0]).evaluate(np.array([1.0, 2.0])).tolist() == [3.0, 6.0]
    assert proj.to_dict() == {"kind": "linear", "weights": [2.0, -1.0], "offset": 0.5}
    assert OutputValue().evaluate(np.array([[1.0], [2.0]])).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"OutputValue needs scalar outputs, got shape \(2, 2\)"):
        OutputValue().evaluate(x)


def test_statistic_counts_and_describes():
    stat = Statistic.linear([1.0, 1.0], 0.0, EDGES)
    assert stat.n_bins == 6
    assert stat.counts(np.array([[0.1, 0.1], [5.0, 0.0], [np.nan, 0.0]])).tolist() \
        == [0, 0, 1, 0, 1, 1]
    assert stat.to_dict() == {"kind": "linear", "weights": [1.0, 1.0], "offset": 0.0,
                              "edges": EDGES.tolist()}
    assert Statistic.output([0, 1]).to_dict() == {"kind": "output", "edges": [0.0, 1.0]}


def test_edges_spanning_widens_the_range():
    edges = edges_spanning(np.array([1.0, 3.0, 2.0]), 4)
    assert np.allclose(edges, np.linspace(0.5, 3.5, 5))
    # a constant pilot still gives strictly increasing edges
    assert np.all(np.diff(edges_spanning(np.full(5, 2.0), 3)) > 0)
    assert np.allclose(edges_spanning(np.array([0.0, 1.0]), 2, margin=0.0), [0.0, 0.5, 1.0])


@pytest.mark.parametrize(("call", "message"), [
    (lambda: check_edges([1.0]), r"edges must be a 1-D array of at least 2 values"),
    (lambda: check_edges([[0.0, 1.0]]), r"edges must be a 1-D array"),
    (lambda: check_edges([0.0, np.inf]), "edges must be finite"),
    (lambda: check_edges([0.0, 1.0, 1.0]), "edges must be strictly increasing"),
    (lambda: Statistic.output([1.0, 0.0]), "edges must be strictly increasing"),
    (lambda: Statistic("output", [0.0, 1.0]), "projection must be an OutputValue"),
    (lambda: LinearProjection([]), "weights must be a non-empty finite vector"),
    (lambda: LinearProjection([1.0, np.nan]), "weights must be a non-empty finite vector"),
    (lambda: LinearProjection([1.0], math.inf), "offset must be a finite real number"),
    (lambda: ExactLLR("P", Mixture(np.array([1.0]), np.array([0.0]), "laplace", 1.0)),
     "P must be an output law"),
    (lambda: ExactLLR(Mixture(np.array([1.0]), np.array([0.0]), "laplace", 1.0),
                      Mixture(np.array([1.0]), np.array([0.0]), "gaussian", 1.0)),
     "P and Q must have the same noise kind and output dimension"),
])
def test_each_parameter_is_validated(call, message):
    with pytest.raises(ValueError, match=message):
        call()



def test_a_pilot_is_counted_on_both_sides_in_the_statistics_bins():
    from audit.records import Pilot
    from audit.statistics import OutputValue, Statistic

    stat = Statistic(OutputValue(), np.array([0.0, 1.0]))
    counted = stat.pilot_counts(Pilot(np.array([-1.0, 0.5, 0.5]), np.array([2.0, 2.0, -3.0])))
    assert counted.trials == 3
    np.testing.assert_array_equal(counted.counts_p, stat.counts(np.array([-1.0, 0.5, 0.5])))
    np.testing.assert_array_equal(counted.counts_q, stat.counts(np.array([2.0, 2.0, -3.0])))
    assert counted.counts_p.sum() == counted.counts_q.sum() == 3
