"""Null study: audits of a private imputer whose exact ε is known must stay below it.

The target is ``imputation:private_mean`` with ``count="public"`` (the imputed value the
observed mean plus Laplace noise at ε/2, then a Laplace sum at ε/2) on the pair of
:func:`audit.model.imputation_pairs.imputation_pair` with n = 20 and m = 10: its exact ε is
1, the claim itself (docs/THEORY.md §11.4, ``private_public_count_pair_epsilon``). Each audit's
ε_lower exceeds the truth with probability at most α = 1 − confidence = 0.05; over N
independent audits (distinct seeds) the number of exceedances is at most Binomial(N, 0.05),
so a count above its 0.999 quantile fails a correct audit with probability ≤ 0.001.
"""

from __future__ import annotations

import pytest
from scipy import stats

from audit.model.imputation_pairs import imputation_pair
from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from audit.theory.imputation import private_public_count_pair_epsilon

N_RECORDS, M = 20, 10
CONFIDENCE = 0.95


def _config(seed: int, trials: int):
    z, z_prime = imputation_pair(N_RECORDS, M)
    doc = {
        "implementation": {"target": "imputation:private_mean", "epsilon": 1.0, "delta": 0.0,
                           "params": {"bounds": [-1.0, 1.0], "count": "public"}},
        "scenario": {"query": "sum", "d": 2, "n": N_RECORDS, "bound": 1.0},
        "missingness": {"kind": "mcar-iid", "rate": 0.0},
        "pair": {"z": z.tolist(), "z_prime": z_prime.tolist()},
        "audit": {"trials": trials, "seed": seed, "confidence": CONFIDENCE, "jobs": 1},
    }
    return config_from_dict(doc, name=f"null[{seed}]")


def _study(audits: int, trials: int) -> tuple[int, int, float]:
    truth = private_public_count_pair_epsilon(N_RECORDS, M, 2.0, 1.0)
    assert truth == pytest.approx(1.0)
    lows = [run_audit(_config(1000 + i, trials)).eps_lower for i in range(audits)]
    over = sum(v > truth for v in lows)
    allowed = int(stats.binom.ppf(0.999, audits, 1.0 - CONFIDENCE))
    return over, allowed, max(lows)


def test_null_study_small():
    """Eight audits of 1,000 calls per side (a few seconds): at most the 0.999 quantile of
    Binomial(8, 0.05), which is 3, above the truth."""
    over, allowed, top = _study(8, 1_000)
    assert over <= allowed, (over, allowed, top)
    assert top > 0.3  # the audits see the pair at all (a broken pair gives 0)


@pytest.mark.slow
def test_null_study_500_audits():
    over, allowed, top = _study(500, 2_000)
    print(f"null study: {over} of 500 audits above the exact ε = 1 (allowed {allowed}), "
          f"largest ε_lower {top:.4f}")
    assert over <= allowed, (over, allowed, top)
