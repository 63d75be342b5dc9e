"""audit.model.missingness_base: the public base classes a new mechanism derives from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from audit.enums import MissingnessClass
from audit.model.missingness_base import IndependentFeatures, Mechanism, all_masks


@dataclass(frozen=True)
class HalfRate(IndependentFeatures):
    """Every feature missing with probability 1/2, independently (MCAR)."""

    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

    def _rates(self, x: np.ndarray) -> np.ndarray:
        return np.full(x.shape, 0.5)

    def p_star(self, d: int) -> float:
        return 1.0 - 0.5**d

    def rho(self, d: int) -> float:
        return 1.0


def test_all_masks_enumerates_every_pattern_once():
    m = all_masks(3)
    assert m.shape == (8, 3) and len({tuple(r) for r in m}) == 8


def test_a_subclass_gets_its_mask_law_sampler_and_kind_from_the_rates():
    mech = HalfRate()
    masks, probs = mech.mask_distribution(np.zeros(3))
    assert masks.shape == (8, 3) and np.allclose(probs, 1 / 8) and probs.sum() == 1.0
    sample = mech.sample_masks(np.zeros((20_000, 2)), np.random.default_rng(0))
    # each entry missing w.p. 1/2: 40,000 Bernoulli draws, 6 standard deviations ≈ 0.015
    assert abs(sample.mean() - 0.5) < 0.015
    assert np.allclose(mech.mask_structure(np.zeros(4)).rates, 0.5)
    assert mech.kind.endswith(":HalfRate")


def test_an_incomplete_subclass_cannot_be_built():
    @dataclass(frozen=True)
    class NoRho(Mechanism):
        missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

        def p_star(self, d):
            return 1.0

    with pytest.raises(TypeError):
        NoRho()


def test_masks_that_cannot_occur_draw_nothing():
    """A mechanism whose rates are all 0 on these records masks nothing and leaves the
    generator as it was (a black-box run's implementation gets the whole stream); one rate
    above 0 draws as before."""
    from audit.model.missingness import make_missingness

    x = np.zeros((4, 3))
    rng, ref = np.random.default_rng(5), np.random.default_rng(5)
    none = make_missingness("mcar-iid", rate=0.0).sample_masks(x, rng)
    assert none.shape == (4, 3) and none.dtype == bool and not none.any()
    assert rng.random() == ref.random()
    some = make_missingness("mcar-iid", rate=0.5).sample_masks(x, rng)
    np.testing.assert_array_equal(some, ref.random((4, 3)) < 0.5)
