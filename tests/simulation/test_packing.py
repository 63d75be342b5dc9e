"""Tests for audit.simulation.packing: the integer codes and flat tuples the kernels read.

Oracles: the alias table's implied distribution recomputed with exact rational arithmetic
(``fractions``), the subset law's constants from ``scipy.special.comb``, and every packed
field read back against the law it came from.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import special

from audit.enums import NoiseKind
from audit.laws import ProductMixture, SubsetMixture
from audit.mixture import Mixture
from audit.simulation.packing import (
    BATCH,
    LAW_CODES,
    LAW_MIXTURE,
    LAW_PRODUCT,
    MODE_CODES,
    MODE_LINEAR,
    MODE_OUTPUT,
    NOISE_CODES,
    NOISE_LAPLACE,
    alias_table,
    bins_of,
    law_of,
    spec_of,
)
from audit.statistics import ExactLLR, LinearProjection, OutputValue, Statistic
from audit.ties import binning_edges

MIX = Mixture(np.array([0.2, 0.3, 0.5]), np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]),
              "laplace", 1.5)
PROD = ProductMixture(np.array([[0.25, 0.75], [1.0, 0.0], [0.5, 0.5]]),
                      np.array([[0.0, 1.0], [2.0, 3.0], [-1.0, 1.0]]), "gaussian", 0.5)
SUB = SubsetMixture(np.array([1.0, -2.0, 0.5, 3.0]), 2, 0.3, "gaussian", 0.8)


@pytest.mark.parametrize("weights", [[1.0], [0.5, 0.5], [0.1, 0.2, 0.3, 0.4],
                                     [1 / 3, 1 / 3, 1 / 3], [0.97, 0.01, 0.01, 0.01, 0.0]])
def test_the_alias_table_draws_each_component_with_its_weight(weights):
    w = np.asarray(weights)
    prob, alias = alias_table(w)
    K = len(w)
    assert prob.dtype == np.float64 and alias.dtype == np.int64
    assert np.all((prob >= 0) & (prob <= 1)) and np.all((alias >= 0) & (alias < K))
    # P[k] = (prob[k] + Σ_{j: alias[j] = k} (1 − prob[j])) / K, exactly
    got = [Fraction(prob[k]) for k in range(K)]
    for j in range(K):
        got[alias[j]] += 1 - Fraction(prob[j])
    for k in range(K):
        assert float(got[k] / K) == pytest.approx(w[k], abs=1e-15)


def test_codes_are_one_distinct_table_each():
    assert set(NOISE_CODES) == set(NoiseKind) and len(set(NOISE_CODES.values())) == 2
    assert set(MODE_CODES) == {OutputValue, LinearProjection, ExactLLR}
    assert len(set(MODE_CODES.values())) == 3 and len(set(LAW_CODES.values())) == 3
    assert NOISE_LAPLACE == NOISE_CODES[NoiseKind.LAPLACE]
    assert (MODE_OUTPUT, MODE_LINEAR) == (MODE_CODES[OutputValue], MODE_CODES[LinearProjection])
    assert (LAW_MIXTURE, LAW_PRODUCT) == (LAW_CODES[Mixture], LAW_CODES[ProductMixture])
    assert BATCH >= 1


def test_a_mixture_packs_its_alias_table_and_log_weights():
    law = law_of(MIX)
    assert (law.noise, law.kind, law.dim, law.scale) == (NOISE_LAPLACE, LAW_MIXTURE, 2, 1.5)
    assert np.array_equal(law.shifts, MIX.shifts) and law.shifts.flags.c_contiguous
    assert np.allclose(np.exp(law.logw), MIX.weights, rtol=1e-15)
    assert np.array_equal(law.prob, alias_table(MIX.weights)[0])
    assert law.scratch == 3  # one float per component


def test_a_product_law_packs_cumulative_and_log_weights():
    law = law_of(PROD)
    assert (law.kind, law.dim) == (LAW_PRODUCT, 3)
    assert np.array_equal(law.cdf[:, -1], np.ones(3))  # u < 1 always finds a component
    assert np.allclose(law.cdf[:, 0], PROD.weights[:, 0])
    assert law.logw2[1, 1] == -np.inf and law.logw2[0, 1] == pytest.approx(math.log(0.75))
    assert np.array_equal(law.shifts, PROD.shifts)


def test_a_subset_law_packs_its_constants():
    law = law_of(SUB)
    assert law.kind == LAW_CODES[SubsetMixture] and law.observed == 2 and law.p_obs == 0.3
    assert np.array_equal(law.shifts, SUB.values[None, :])
    assert law.log_off == pytest.approx(math.log(0.7), rel=1e-15)
    assert law.log_on == pytest.approx(math.log(0.3 / special.comb(4, 2, exact=True)), rel=1e-14)
    assert law.scratch == 4 + 2 + 1
    never = law_of(SubsetMixture(np.array([1.0, 2.0]), 1, 0.0, "laplace", 1.0))
    assert never.log_on == -np.inf and never.log_off == 0.0


def test_spec_of_each_mode():
    edges = np.linspace(-2.0, 2.0, 5)
    P = Mixture(np.array([1.0]), np.array([1.0]), "gaussian", 1.0)
    Q = Mixture(np.array([1.0]), np.array([0.0]), "gaussian", 1.0)
    out = spec_of(P, Q, Statistic.output(edges))
    assert out.score.mode == MODE_OUTPUT and out.lp is out.p  # placeholders: P itself
    lin = spec_of(MIX, MIX, Statistic.linear([2.0, -1.0], 0.5, edges))
    assert lin.score.mode == MODE_LINEAR and lin.score.weights.tolist() == [2.0, -1.0]
    assert lin.score.offset == 0.5
    llr = spec_of(P, Q, Statistic.llr(Q, P, edges))  # LLR laws need not be the sampled ones
    assert llr.score.mode == MODE_CODES[ExactLLR]
    assert llr.lp.shifts[0, 0] == 0.0 and llr.lq.shifts[0, 0] == 1.0
    assert llr.p.shifts[0, 0] == 1.0 and np.array_equal(llr.bins.edges, binning_edges(edges))


def test_bins_of_detects_uniform_edges():
    u = bins_of(np.linspace(-1.0, 3.0, 9))
    # the edges the kernels compare with: moved down by the tie tolerance (audit.ties)
    assert u.uniform and u.lo == binning_edges(np.linspace(-1.0, 3.0, 9))[0] < -1.0
    assert u.inv_width == pytest.approx(2.0)
    n = bins_of([0.0, 1.0, 3.0])
    assert not n.uniform and n.inv_width == 0.0
    with pytest.raises(ValueError, match="edges must be strictly increasing"):
        bins_of([0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="edges must be a 1-D array of at least 2 values"):
        bins_of([1.0])
