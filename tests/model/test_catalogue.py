"""Tests for audit.model.catalogue: building catalogue entries from config keys and back.

Oracle: a tiny synthetic catalogue of frozen dataclasses whose fields are known by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from audit.model.catalogue import build, config_params
from audit.model.queries import make_query


@dataclass(frozen=True)
class Fixed:
    observed: int
    p_star_value: float = 0.5


@dataclass(frozen=True)
class Rates:
    rate: np.ndarray

    def __post_init__(self):
        if np.any(np.asarray(self.rate) < 0):
            raise ValueError(f"rate must be >= 0, got rate={self.rate!r}")


CATALOGUE = {"fixed": Fixed, "rates": Rates}
KEYS = {"p_star_value": "p_star"}


def _build(name, params, aliases=None):
    return build(CATALOGUE, name, params, what="toy kind", param="kind", config_keys=KEYS,
                 aliases=aliases)


def test_build_maps_config_keys_to_fields():
    assert _build("fixed", {"observed": 3, "p_star": 0.25}) == Fixed(3, 0.25)
    assert _build("fixed", {"observed": 3}) == Fixed(3, 0.5)  # defaults kept
    assert _build("rates", {"r": [0.1]}, aliases={"r": "rate"}).rate == [0.1]


def test_config_params_round_trips_under_config_keys():
    entry = Fixed(4, 0.75)
    doc = config_params(entry, KEYS)
    assert doc == {"observed": 4, "p_star": 0.75}
    assert _build("fixed", doc) == entry
    arr = config_params(Rates(np.array([0.1, 0.2])), KEYS)
    assert arr == {"rate": [0.1, 0.2]} and isinstance(arr["rate"], list)


def test_a_real_catalogue_round_trips():
    query = make_query("clipped-mean", clip=2.5)
    assert query.params() == {"clip": 2.5}
    again = make_query("clipped-mean", **query.params())
    assert type(again) is type(query) and again.clip == 2.5
    with pytest.raises(ValueError, match=r"unknown parameter 'clip' for query 'sum'"):
        make_query("sum", clip=1.0)


@pytest.mark.parametrize(("name", "params", "message"), [
    ("nope", {}, r"^kind must be one of 'fixed', 'rates', got kind='nope'$"),
    ("fixed", {"observed": 1, "p_star_value": 0.5},  # the field name is not the config key
     r"^unknown parameter 'p_star_value' for toy kind 'fixed'; allowed: observed, p_star$"),
    ("fixed", {"observed": 1, "r": 0.1}, r"unknown parameter 'r'"),  # alias of another entry
    ("fixed", {}, r"^toy kind 'fixed': .*observed"),  # a missing required parameter
    ("rates", {"rate": [-1.0]}, r"rate must be >= 0"),  # the entry's own validation
])
def test_build_refuses_what_it_cannot_build(name, params, message):
    with pytest.raises(ValueError, match=message):
        _build(name, params, aliases={"r": "rate"})
