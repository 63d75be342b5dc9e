"""audit.pipeline.search_config: the [search] table."""

from __future__ import annotations

import pytest

from audit.enums import PairFamily
from audit.pipeline.search_config import (
    DEFAULT_FAMILIES,
    SearchConfig,
    check_search_setting,
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
    # what a searched pair cannot run with otherwise is its part's answer (test_parts.py)
    with pytest.raises(ValueError, match="exclusive"):
        check_search_setting(SearchConfig(families=DEFAULT_FAMILIES), pair=True)
    check_search_setting(SearchConfig(families=DEFAULT_FAMILIES), pair=False)
