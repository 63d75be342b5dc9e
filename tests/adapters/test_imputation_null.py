"""Null studies: audits of imputation targets whose exact ε is known must stay below it.

Each setting is a target on the pair of :func:`audit.model.imputation_pairs.imputation_pair`
(n = 20) whose exact ε docs/THEORY.md §11 gives:

- ``public-count``: ``imputation:private_mean`` with ``count="public"`` (the imputed value
  the observed mean plus Laplace noise at ε/2, then a Laplace sum at ε/2), m = 10: exact ε 1,
  the claim itself (§11.4, ``private_public_count_pair_epsilon``);
- ``mar-rate``: mean imputation before the Laplace sum, claimed ε = 2, the m = 4 values
  masked by the MAR mechanism at rate 0.5: exact 2.229 (§11.5, ``mean_mar_pair_epsilon``);
- ``gaussian``: mean imputation before the Gaussian sum claimed (ε, δ) = (1, 0.01), m = 4:
  exact ε 1.346 at δ = 0.01 (§11.5, ``pair_epsilon(..., delta=0.01)``).

Each audit's ε_lower exceeds the truth with probability at most α = 1 − confidence = 0.05;
over N independent audits (distinct seeds) the number of exceedances is at most
Binomial(N, 0.05), so a count above its 0.999 quantile fails a correct audit with probability
≤ 0.001.
"""

from __future__ import annotations

import pytest
from scipy import stats

from audit.model.imputation_pairs import imputation_pair, mar_mask_params
from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from audit.theory.imputation import (
    mean_mar_pair_epsilon,
    pair_epsilon,
    private_public_count_pair_epsilon,
)

N_RECORDS = 20
CONFIDENCE = 0.95
#: setting -> (target, ε, δ, extra parameters, m, MAR rate or None, the exact ε)
SETTINGS = {
    "public-count": ("private_mean", 1.0, 0.0, {"count": "public"}, 10, None,
                     private_public_count_pair_epsilon(N_RECORDS, 10, 2.0, 1.0)),
    "mar-rate": ("mean", 2.0, 0.0, {}, 4, 0.5, mean_mar_pair_epsilon(N_RECORDS, 4, 2.0, 2.0,
                                                                      0.5)),
    "gaussian": ("mean", 1.0, 0.01, {"release": "gaussian"}, 4, None,
                 pair_epsilon("mean", N_RECORDS, 4, 2.0, 1.0, delta=0.01)),
}


def _config(setting: str, seed: int, trials: int):
    function, eps, delta, params, m, rate, _ = SETTINGS[setting]
    z, z_prime = imputation_pair(N_RECORDS, m, mask="mcar" if rate is None else "mar")
    doc = {
        "implementation": {"target": f"imputation:{function}", "epsilon": eps,
                           "delta": delta, "params": {"bounds": [-1.0, 1.0], **params}},
        "scenario": {"query": "sum", "d": 2, "n": N_RECORDS, "bound": 1.0},
        "missingness": ({"kind": "mcar-iid", "rate": 0.0} if rate is None
                        else mar_mask_params(rate)),
        "pair": {"z": z.tolist(), "z_prime": z_prime.tolist()},
        "audit": {"trials": trials, "seed": seed, "confidence": CONFIDENCE, "jobs": 1},
    }
    return config_from_dict(doc, name=f"null[{setting}, {seed}]")


def _study(setting: str, audits: int, trials: int) -> tuple[int, int, float]:
    truth = SETTINGS[setting][-1]
    lows = [run_audit(_config(setting, 1000 + i, trials)).eps_lower for i in range(audits)]
    over = sum(v > truth for v in lows)
    allowed = int(stats.binom.ppf(0.999, audits, 1.0 - CONFIDENCE))
    return over, allowed, max(lows)


def test_the_settings_truths():
    assert SETTINGS["public-count"][-1] == pytest.approx(1.0)
    assert SETTINGS["mar-rate"][-1] == pytest.approx(2.2292, abs=1e-4)
    assert SETTINGS["gaussian"][-1] == pytest.approx(1.3458, abs=1e-4)


def test_null_study_small():
    """Eight audits of 1,000 calls per side (a few seconds): at most the 0.999 quantile of
    Binomial(8, 0.05), which is 3, above the truth."""
    over, allowed, top = _study("public-count", 8, 1_000)
    assert over <= allowed, (over, allowed, top)
    assert top > 0.3  # the audits see the pair at all (a broken pair gives 0)


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_null_study_500_audits(setting):
    over, allowed, top = _study(setting, 500, 2_000)
    print(f"null study {setting}: {over} of 500 audits above the exact ε = "
          f"{SETTINGS[setting][-1]:.4f} (allowed {allowed}), largest ε_lower {top:.4f}")
    assert over <= allowed, (over, allowed, top)
