"""Contract tests every attack inherits, plus attack-specific checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from attacks import (
    AdditiveDensityRatio,
    Auto,
    Categorical,
    DensityRatio,
    ExactLikelihoodRatio,
    IsotonicSum,
    LatentMixture,
    LogisticRegression,
    NearestNeighbours,
    OutputThreshold,
)
from attacks.kvector import LatentMixtureLogRatio
from audit.mixture import Mixture
from audit.protocols import (
    BlackBoxAttack,
    Laws,
    Pilot,
    Score,
    WhiteBoxAttack,
    available_attacks,
    load_attack,
)
from audit.statistics import (
    CoordinateSum,
    ExactLLR,
    LinearProjection,
    NeighbourLogRatio,
    OutputValue,
)

SCALAR_P = Mixture([0.5, 0.5], [0.0, 3.0], "laplace", 20.0 / 10)
SCALAR_Q = Mixture([0.5, 0.5], [0.0, -3.0], "laplace", 20.0 / 10)
VECTOR_P = Mixture([0.5, 0.5], [[0.0, 0.0], [2.0, 1.0]], "gaussian", 1.0)
VECTOR_Q = Mixture([1.0], [[0.0, 0.0]], "gaussian", 1.0)


def _input(P, Q, m=20_000, seed=0):
    rng = np.random.default_rng(seed)
    return Pilot(P.sample(m, rng), Q.sample(m, rng)), Laws(P, Q)


def _fit(attack, data):
    """Fit as the runner does: the laws only for a white-box attack."""
    pilot, laws = data
    return attack.fit(pilot, laws) if attack.white_box else attack.fit(pilot)


class AttackContract:
    """Every attack: protocol, deterministic fit, finite scores, separation, bin layout."""

    attack: BlackBoxAttack | WhiteBoxAttack
    #: the projections the attack may return on continuous scalar and vector pilots
    projections = {"scalar": (OutputValue,), "vector": (ExactLLR, LinearProjection)}
    #: pilot draws per side the contract fits on
    pilot = 20_000

    def test_protocol(self):
        assert isinstance(self.attack, BlackBoxAttack | WhiteBoxAttack)
        assert isinstance(self.attack.name, str) and isinstance(self.attack.white_box, bool)
        assert self.attack.name in available_attacks()
        # White-box-ness is a property of the class, and a black-box attack's fit takes
        # samples only: it cannot be handed the laws.
        assert self.attack.white_box == isinstance(self.attack, WhiteBoxAttack)
        params = list(inspect.signature(self.attack.fit).parameters)
        assert params == (["pilot", "laws"] if self.attack.white_box else ["pilot"])

    @pytest.mark.parametrize("kind", ["scalar", "vector"])
    def test_fit_returns_deterministic_finite_score(self, kind):
        P, Q = (SCALAR_P, SCALAR_Q) if kind == "scalar" else (VECTOR_P, VECTOR_Q)
        data = _input(P, Q, self.pilot)
        s1, s2 = _fit(self.attack, data), _fit(self.attack, data)
        assert isinstance(s1, Score)
        x = data[0].p[:1000]
        a, b = s1(x), s2(x)
        assert a.shape == (1000,)
        assert np.all(np.isfinite(a))
        np.testing.assert_array_equal(a, b)
        assert isinstance(s1.projection, self.projections[kind])

    @pytest.mark.parametrize("kind", ["scalar", "vector"])
    def test_score_separates_the_two_sides(self, kind):
        # On fresh samples the score's mean is larger under P than under Q (either sign of
        # a threshold attack is fine: regions are tried in both directions).
        P, Q = (SCALAR_P, SCALAR_Q) if kind == "scalar" else (VECTOR_P, VECTOR_Q)
        score = _fit(self.attack, _input(P, Q, self.pilot))
        rng = np.random.default_rng(99)
        gap = score(P.sample(50_000, rng)).mean() - score(Q.sample(50_000, rng)).mean()
        assert abs(gap) > 0
        if self.attack.name != "threshold" or kind == "scalar":
            assert gap > 0

    def test_per_bin_layout(self):
        score = _fit(self.attack, _input(SCALAR_P, SCALAR_Q, self.pilot))
        edges = np.linspace(-10, 10, 51)
        s = score.per_bin(edges)
        assert s.shape == (53,)  # underflow, 50 bins, overflow, NaN
        assert np.all(np.isfinite(s[:-1]))
        assert not np.isnan(s[-1])  # the NaN bin is scored (−inf when the attack cannot)


class TestExactLR(AttackContract):
    attack = ExactLikelihoodRatio()

    def test_matches_mixture_llr(self):
        score = _fit(self.attack, _input(SCALAR_P, SCALAR_Q, m=10))
        x = np.array([-30.0, 0.0, 1.0, 30.0])
        np.testing.assert_allclose(score(x), SCALAR_P.logpdf(x) - SCALAR_Q.logpdf(x))
        # Laplace mixtures: the LLR is bounded by the component shift difference / b.
        assert np.all(np.abs(score(np.linspace(-100, 100, 1001))) <= 6.0 / 2.0 + 1e-12)


class TestDensityRatio(AttackContract):
    attack = DensityRatio()

    def test_estimates_llr(self):
        score = _fit(self.attack, _input(SCALAR_P, SCALAR_Q, m=200_000))
        x = np.linspace(-3, 3, 7)
        truth = SCALAR_P.logpdf(x) - SCALAR_Q.logpdf(x)
        np.testing.assert_allclose(score(x), truth, atol=0.15)

    @pytest.mark.parametrize("kw", [{"n_bins": 2}, {"smoothing": -1.0}, {"pseudo_count": 0.0},
                                    {"tail": 0.5}])
    def test_rejects_bad_parameters(self, kw):
        name = next(iter(kw))
        with pytest.raises(ValueError, match=name):
            DensityRatio(**kw)


class TestLogistic(AttackContract):
    attack = LogisticRegression()

    def test_vector_weights_point_along_the_mean_difference(self):
        score = _fit(self.attack, _input(VECTOR_P, VECTOR_Q, m=50_000))
        w = score.projection.weights
        assert w[0] > w[1] > 0  # mean difference is (1, 0.5)


class TestThreshold(AttackContract):
    attack = OutputThreshold()


class TestCategorical(AttackContract):
    attack = Categorical()  # continuous pilots: the density ratio, said in the note

    def test_continuous_pilots_fall_back_and_say_so(self):
        score = _fit(self.attack, _input(VECTOR_P, VECTOR_Q, m=2000))
        assert "fell back to the density-ratio attack" in score.note


class TestNearestNeighbours(AttackContract):
    attack = NearestNeighbours()
    projections = {"scalar": (NeighbourLogRatio,), "vector": (NeighbourLogRatio,)}


class TestAdditive(AttackContract):
    attack = AdditiveDensityRatio()
    projections = {"scalar": (CoordinateSum,), "vector": (CoordinateSum,)}


class TestIsotonic(AttackContract):
    attack = IsotonicSum()
    projections = {"scalar": (CoordinateSum,), "vector": (CoordinateSum,)}


class TestLatentMixture(AttackContract):
    attack = LatentMixture()
    projections = {"scalar": (LatentMixtureLogRatio,), "vector": (LatentMixtureLogRatio,)}
    pilot = 5_000  # its fit (EM per side) is the slowest of the contract's: a quarter


class TestAuto(AttackContract):
    attack = Auto()
    projections = {"scalar": (OutputValue,),
                   "vector": (LinearProjection, CoordinateSum, NeighbourLogRatio,
                              LatentMixtureLogRatio)}


def test_every_registered_attack_loads_and_is_tested_here():
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = set(tomllib.loads(pyproject.read_text())["project"]["entry-points"]
                   ["audit.attacks"])
    assert declared == {"exact-lr", "density-ratio", "logistic", "threshold", "categorical",
                        "knn", "additive", "isotonic", "kvector", "auto"}
    names = set(available_attacks())
    assert names == declared, (f"installed entry points {sorted(names)} differ from "
                               f"pyproject.toml's: reinstall (pip install -e .)")
    for name in names:
        assert load_attack(name).name == name


def test_unknown_attack_is_refused():
    with pytest.raises(ValueError, match="attack must be one of"):
        load_attack("oracle")


def test_score_needs_a_projection():
    with pytest.raises(ValueError, match="projection"):
        Score("x", ("quadratic",))
