"""audit.pipeline.search_config: the [search] table."""

from __future__ import annotations

import pytest

from audit.enums import PairFamily
from audit.pipeline.search_config import (
    DEFAULT_FAMILIES,
    search_from_table,
)


def test_defaults_and_round_trip():
    s = search_from_table({})
    assert s.families == DEFAULT_FAMILIES and (s.cap, s.calls, s.pairs) == (16, 2000, ())
    t = search_from_table({"families": ["list", "nan"], "cap": 4.0, "calls": 1e3,
                           "pairs": [{"z": [[1.0]], "z_prime": [[0.0]]}]})
    assert t.families == (PairFamily.LIST, PairFamily.NAN) and (t.cap, t.calls) == (4, 1000)
    assert search_from_table(t.to_dict()) == t


@pytest.mark.parametrize("table, needle", [
    ({"families": ["nan", "nan"]}, "must not repeat"),
    ({"families": []}, "non-empty list"),
    ({"cap": 1.5}, "search.cap must be"),
    ({"calls": 99}, "search.calls must be an integer >= 100"),
    ({"pairs": [{"z": [[1.0]], "z_prime": [[0.0]]}]}, "exactly when search.families lists"),
    ({"pairs": "x"}, "search.pairs must be a list"),
])
def test_bad_values_name_the_key(table, needle):
    with pytest.raises(ValueError, match=needle):
        search_from_table(table)


def test_two_pair_sources_are_refused():
    # the given pair's answer (audit.pipeline.parts.GivenPair): the loader refuses both tables
    from audit.pipeline.config import config_from_dict

    doc = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1, "n": 2},
           "missingness": {"kind": "mcar-iid", "rate": 0.2},
           "pair": {"z": [[1.0], [0.0]], "z_prime": [[-1.0], [0.0]]},
           "search": {"families": ["corners"]}}
    with pytest.raises(ValueError, match=r"^\[search\] and \[pair\] are exclusive"):
        config_from_dict(doc)
    doc["implementation"] = {"target": "tests.adapters.example_mechanisms:noisy_sum",
                             "epsilon": 1.0, "params": {"bound": 1.0, "scale": 2.0}}
    with pytest.raises(ValueError, match=r"^\[search\] and \[pair\] are exclusive"):
        config_from_dict(doc)
