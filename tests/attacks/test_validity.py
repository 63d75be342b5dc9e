"""Validity of the new black-box attacks: on a release that ignores its input (true ε = 0),
ε_lower > 0 happens no more often than the audit's α = 5 % allows (binomial 1e-3 quantile
over fixed seeds), for every new attack, through the whole implementation pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit

ALPHA = 0.05


def _noise(datasets, rng):
    return rng.laplace(0.0, 1.0, size=(datasets.shape[0], 2))


def _noise_nan(datasets, rng):
    """The null release with its second coordinate NaN 30 % of the time (knn then scores
    those rows by their first coordinate, per NaN pattern)."""
    out = rng.laplace(0.0, 1.0, size=(datasets.shape[0], 2))
    out[rng.random(datasets.shape[0]) < 0.3, 1] = np.nan
    return out


def _shared_latent(datasets, rng):
    """Five releases around one latent value per call (a Binomial(10, 0.1) count, as a sum
    over a record's observed features), Laplace(20) noise, the same law on both sides: the
    structure the kvector attack fits, with nothing to find."""
    m = datasets.shape[0]
    latent = rng.binomial(10, 0.1, size=(m, 1)).astype(np.float64)
    return latent + rng.laplace(0.0, 20.0, size=(m, 5))


def _bits(datasets, rng):
    return (rng.random((datasets.shape[0], 3)) < [0.5, 0.3, 0.1]).astype(np.float64)


def _impl(batch):
    return CallableImplementation(lambda d, rng: batch(d[None], rng)[0], Claim(1.0, 0.0, "null"),
                                  batch.__name__, batch_func=batch)


def _doc(attack: str, trials: int, seed: int) -> dict:
    return {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 2},
            "pair": {"z": [[1.0, 1.0], [0.0, 0.0]], "z_prime": [[0.0, 0.0], [0.0, 0.0]]},
            "missingness": {"kind": "mcar-iid", "rate": 0.0},
            "audit": {"trials": trials, "seed": seed, "attack": attack}}


def _exceedances(attack: str, batch, audits: int, trials: int) -> int:
    impl = _impl(batch)
    return sum(run_audit(config_from_dict(_doc(attack, trials, seed)),
                         implementation=impl).eps_lower > 0.0 for seed in range(audits))


CASES = [("categorical", _bits), ("auto", _bits), ("knn", _noise), ("knn", _noise_nan),
         ("additive", _noise), ("isotonic", _noise), ("auto", _noise), ("kvector", _noise),
         ("kvector", _shared_latent), ("auto", _shared_latent)]


@pytest.mark.statistical
@pytest.mark.parametrize(("attack", "batch"), CASES, ids=lambda c: getattr(c, "__name__", c))
def test_null_audits_exceed_zero_at_most_at_rate_alpha(attack, batch):
    audits = 20  # the reduced twin of the slow test below
    assert _exceedances(attack, batch, audits, 1000) <= binom.ppf(1 - 1e-3, audits, ALPHA)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize(("attack", "batch"), CASES, ids=lambda c: getattr(c, "__name__", c))
def test_null_audits_exceed_zero_at_most_at_rate_alpha_slow(attack, batch):
    audits = 100
    assert _exceedances(attack, batch, audits, 2000) <= binom.ppf(1 - 1e-3, audits, ALPHA)
