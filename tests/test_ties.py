"""The tie rules (audit.ties): the same bins and rankings whatever the CPU's last bits."""

import numpy as np

from audit.statistics import bin_indices
from audit.ties import SCORE_QUANTUM, quantise_scores, tie_tolerance

EDGES = np.array([-1.0, 0.0, 0.5, 2.0])


def test_a_tie_with_an_edge_is_binned_the_same_whatever_its_last_bits():
    # LLR 0 of a symmetric point (x = 0.5 here) is computed a few ulps either side of 0, which
    # side depending on the CPU's vector math; the edge at 0 must take it either way
    edges = EDGES
    for v in (0.0, 1e-17, -1e-17, np.nextafter(0.5, 0.0), np.nextafter(2.0, 0.0)):
        assert bin_indices(np.array([v]), edges)[0] == np.searchsorted(edges, round(v, 9),
                                                                        side="right")
    tol = tie_tolerance(edges)
    assert 0 < tol < 1e-8
    # a value clearly below an edge (twice the tolerance) stays in the bin before it
    assert bin_indices(np.array([0.5 - 2 * tol]), edges)[0] == 2
    assert bin_indices(np.array([0.5 - 0.5 * tol]), edges)[0] == 3


def test_bin_scores_are_quantised_so_exact_ties_stay_tied():
    s = np.array([0.3, np.nextafter(0.3, 1.0), np.nextafter(0.3, 0.0), 1e-17, -1e-17, -np.inf,
                  np.inf, np.nan])
    q = quantise_scores(s)
    assert q[0] == q[1] == q[2] and q[3] == q[4] == 0.0
    assert abs(q[0] - 0.3) <= SCORE_QUANTUM / 2
    assert q[5] == -np.inf and q[6] == np.inf and np.isnan(q[7])
