"""What a config's [scenario] means outside sampling (audit.pipeline.scenario): the release
scale, the keys in messages, the accountant's setting."""

from __future__ import annotations

import math

import pytest

from audit.enums import MaskRegime, NoiseKind
from audit.pipeline.config import config_from_dict
from audit.pipeline.scenario import (
    check_release_scale,
    release_scale,
    scenario_keys,
    setting_from_config,
)


def _cfg(**scenario) -> object:
    sc = {"noise": "laplace", "epsilon": 1.0, "query": "sum", "d": 1, "n": 10,
          "domain": [0.0, 1.0], "na_value": 0.0, **scenario}
    return config_from_dict({"scenario": sc,
                             "missingness": {"kind": "mcar-row", "p_star": 0.1},
                             "releases": {"count": 5, "masks": "fresh"}}, for_audit=False)


def test_the_setting_of_a_count_like_sum():
    s = setting_from_config(_cfg())
    assert s.noise is NoiseKind.LAPLACE and s.scale == pytest.approx(1.0)  # Δ = 1, ε = 1
    assert s.domain == (0.0, 1.0) and s.na_value == 0.0 and s.observation == pytest.approx(0.1)
    assert s.releases == 5 and s.masks is MaskRegime.FRESH


def test_na_outside_the_domain_widens_the_sensitivity():
    # Δ = max(hi − lo, |hi − na|, |lo − na|) = 3 at domain [0, 1], na 3
    assert setting_from_config(_cfg(na_value=3.0)).scale == pytest.approx(3.0)
    assert release_scale(_cfg().scenario, 2.0) == pytest.approx(2.0)


def test_messages_name_the_keys_and_a_scale_out_of_range_is_refused():
    sc = _cfg().scenario
    assert scenario_keys(sc) == "scenario.query = 'sum', scenario.d = 1, scenario.n = 10"
    assert check_release_scale(sc, 2.5) == 2.5
    with pytest.raises(ValueError, match="scenario.epsilon must be at least"):
        check_release_scale(sc, math.inf)


def test_settings_outside_the_family_are_refused_naming_the_key():
    with pytest.raises(ValueError, match="scenario.query must be 'sum'"):
        setting_from_config(_cfg(query="bounded-mean"))
