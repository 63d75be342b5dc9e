"""audit.model.pair_families: the declared candidate pairs of a black-box pair search."""

from __future__ import annotations

import numpy as np
import pytest

from audit.enums import PairFamily
from audit.model.pair_families import TESTER_PATTERNS, candidate_pairs


def _differing(c) -> np.ndarray:
    same = (c.z == c.z_prime) | (np.isnan(c.z) & np.isnan(c.z_prime))
    return np.flatnonzero(~np.all(same, axis=1))


@pytest.mark.parametrize("family", ["corners", "nan", "nan-position"])
@pytest.mark.parametrize("d", [1, 3])
def test_every_candidate_is_a_pair_of_neighbours_in_the_domain(family, d):
    cands = candidate_pairs([family], 4, d, 2.0, 50)
    assert cands and all(c.family is PairFamily(family) for c in cands)
    for c in cands:
        assert c.z.shape == c.z_prime.shape == (4, d)
        assert _differing(c).tolist() == [0]  # record 0 only; the others 0
        assert np.all(c.z[1:] == 0) and np.all(c.z_prime[1:] == 0)
        for a in (c.z, c.z_prime):
            assert np.all(np.abs(a[~np.isnan(a)]) <= 2.0)
    keys = {(tuple(np.nan_to_num(c.z[0], nan=9)), tuple(np.nan_to_num(c.z_prime[0], nan=9)))
            for c in cands}
    assert len(keys) == len(cands)  # no repeats


def test_family_contents():
    corners = candidate_pairs(["corners"], 2, 2, 1.0, 50)
    labels = {c.label for c in corners}
    assert "(-1, -1) vs (1, 1)" in labels and "(1, 1) vs 0" in labels
    # unordered: (v, −v) appears once for each pair {v, −v}
    assert sum(lab.endswith("vs (1, 1)") and lab.startswith("(-1, -1)") for lab in labels) == 1
    nan = candidate_pairs(["nan"], 2, 2, 1.0, 50)
    assert all(np.isnan(c.z_prime[0]).all() for c in nan) and len(nan) == 5  # 4 corners + 0
    pos = candidate_pairs(["nan-position"], 2, 3, 1.0, 50)
    assert len(pos) == 8 * 3 and all(np.isnan(c.z_prime[0]).sum() == 1 for c in pos)


def test_tester_patterns_are_statdps_on_one_record():
    cands = candidate_pairs(["tester"], 1, 5, 1.0, 50)
    assert [c.label for c in cands] == list(TESTER_PATTERNS)
    by = {c.label: c.z_prime[0] - c.z[0] for c in cands}
    np.testing.assert_array_equal(by["one above rest below"], [1, -1, -1, -1, -1])
    np.testing.assert_array_equal(by["x shape"], [-1, -1, 1, 1, 1])
    for c in cands:  # the testers' adjacency: ‖x − x′‖∞ ≤ 1
        assert np.max(np.abs(c.z_prime - c.z)) <= 1.0


@pytest.mark.parametrize("d", [2, 5, 10])
def test_tester_patterns_are_statdps_about_its_base_input(d):
    """StatDP's (and DP-Sniper's) inputs are these pairs plus its base input (1, …, 1): the
    X shape splits the entries at ⌊d/2⌋ (5 and 5 at d = 10, as DP-Sniper's SVT pairs)."""
    h = d // 2
    statdp = {"one above": ([1] * d, [2] + [1] * (d - 1)),
              "one below": ([1] * d, [0] + [1] * (d - 1)),
              "one above rest below": ([1] * d, [2] + [0] * (d - 1)),
              "one below rest above": ([1] * d, [0] + [2] * (d - 1)),
              "half above half below": ([1] * d, [2] * h + [0] * (d - h)),
              "all above": ([1] * d, [2] * d), "all below": ([1] * d, [0] * d),
              "x shape": ([1] * h + [0] * (d - h), [0] * h + [1] * (d - h))}
    cands = candidate_pairs(["tester"], 1, d, 1.0, 50)
    for c in cands:
        a, b = statdp.pop(c.label)
        np.testing.assert_array_equal(c.z[0] + 1.0, a, err_msg=c.label)
        np.testing.assert_array_equal(c.z_prime[0] + 1.0, b, err_msg=c.label)
    kept = {(tuple(c.z[0] + 1.0), tuple(c.z_prime[0] + 1.0)) for c in cands}
    # what is left coincides with a pattern kept (d = 2: half above half below is one above
    # rest below)
    assert all((tuple(map(float, a)), tuple(map(float, b))) in kept for a, b in statdp.values())
    assert len(cands) == (8 if d > 2 else 7)


def test_large_families_are_capped_and_sampled_reproducibly():
    a = candidate_pairs(["corners", "nan-position"], 3, 16, 1.0, 7, seed=4)
    b = candidate_pairs(["corners", "nan-position"], 3, 16, 1.0, 7, seed=4)
    c = candidate_pairs(["corners", "nan-position"], 3, 16, 1.0, 7, seed=5)
    assert len(a) == 14
    assert all(np.array_equal(x.z, y.z, equal_nan=True) for x, y in zip(a, b, strict=True))
    assert any(not np.array_equal(x.z, y.z, equal_nan=True) for x, y in zip(a, c, strict=True))


def test_listed_pairs_are_kept_as_given():
    z, zp = [[1.0], [0.0]], [[np.nan], [0.0]]
    (c,) = candidate_pairs(["list"], 2, 1, 1.0, 4, pairs=[(z, zp)])
    assert c.family is PairFamily.LIST and np.isnan(c.z_prime[0, 0])
    assert c.to_dict() == {"family": "list", "label": "pair 0", "z0": [1.0], "z_prime0": [None]}


@pytest.mark.parametrize("kwargs, needle", [
    ({"families": []}, "non-empty list without repeats"),
    ({"families": ["nan", "nan"]}, "non-empty list without repeats"),
    ({"families": ["everything"]}, "search.families must be one of"),
    ({"families": ["tester"], "n": 3}, "n must be 1, got n=3"),
    ({"families": ["list"]}, "search.pairs must be given exactly when"),
    ({"cap": 0}, "search.cap must be"),
    ({"cap": 5000}, r"search.cap must be in \[1, 1000\]"),
    ({"families": ["list"], "pairs": [([[1.0]], [[0.0]])]}, r"must be two datasets of shape"),
])
def test_bad_input_is_refused_with_the_parameter(kwargs, needle):
    args = {"families": ["corners"], "n": 2, "d": 2, "bound": 1.0, "cap": 4, **kwargs}
    pairs = args.pop("pairs", ())
    with pytest.raises(ValueError, match=needle):
        candidate_pairs(args.pop("families"), args["n"], args["d"], args["bound"], args["cap"],
                        pairs=pairs)


TABLE = np.array([[0.5, -0.25], [np.nan, 1.0], [1.0, 1.0], [np.nan, np.nan]])


def test_table_candidates_replace_one_record_of_the_users_table():
    from audit.model.pair_families import MAX_CANDIDATES

    cands = candidate_pairs(["table"], 4, 2, 1.0, MAX_CANDIDATES, table=TABLE)
    labels = [c.label for c in cands]
    assert len(labels) == len(set(labels))
    for c in cands:
        np.testing.assert_array_equal(c.z, TABLE)  # z is the user's table, NA kept
        (i,) = _differing(c)
        assert c.record == i and c.to_dict().get("record", 0) == i
        new = c.z_prime[i]
        assert np.all(np.isnan(new) | (np.abs(new) <= 1.0))
    replaced = {(c.record, c.label.split(" vs ")[1]) for c in cands}
    # every record against both corners and NA, except where that is the record itself
    assert (2, "+B") not in replaced and (3, "NA") not in replaced
    assert {(0, "+B"), (0, "-B"), (0, "NA"), (2, "-B"), (3, "+B")} <= replaced
    # record 0 with the NaN pattern of record 1 (its feature 0 NA)
    assert (0, "NA at [0]") in replaced and (1, "NA at [0]") not in replaced
    assert len(candidate_pairs(["table"], 4, 2, 1.0, 3, table=TABLE)) == 3


@pytest.mark.parametrize(("table", "kw", "needle"), [
    (None, {}, "search.table must be given exactly"),
    (TABLE[:3], {}, r"must have scenario.n × scenario.d = 4 × 2 entries"),
    (TABLE * 3, {}, r"values in \[-bound, bound\]"),
])
def test_a_table_that_does_not_fit_the_setting_is_refused(table, kw, needle):
    with pytest.raises(ValueError, match=needle):
        candidate_pairs(["table"], 4, 2, 1.0, 10, table=table, **kw)
    with pytest.raises(ValueError, match="search.table must be given exactly"):
        candidate_pairs(["corners"], 4, 2, 1.0, 10, table=TABLE)


def test_a_users_table_is_read_from_csv_or_npy(tmp_path):
    from audit.model.pair_families import read_table

    csv = tmp_path / "t.csv"
    csv.write_text("age,income\n0.5,-0.25\n,1\nNA,nan\n")
    out = read_table(str(csv))
    np.testing.assert_array_equal(out, [[0.5, -0.25], [np.nan, 1.0], [np.nan, np.nan]])
    np.save(tmp_path / "t.npy", TABLE)
    np.testing.assert_array_equal(read_table(str(tmp_path / "t.npy")), TABLE)


@pytest.mark.parametrize(("content", "needle"), [
    (None, "readable table of numbers"),
    ("1,2\n3\n", "readable table of numbers"),
    ("1,2\n3,x\n", "readable table of numbers"),
    ("a,b\n", "non-empty 2-D"),
])
def test_an_unreadable_table_is_refused_naming_the_key(tmp_path, content, needle):
    from audit.model.pair_families import read_table

    path = tmp_path / "t.csv"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=needle) as err:
        read_table(str(path))
    assert "search.table" in str(err.value)


def test_a_table_too_large_is_refused(tmp_path):
    from audit.model.pair_families import MAX_TABLE_ENTRIES, read_table

    np.save(tmp_path / "big.npy", np.zeros((MAX_TABLE_ENTRIES + 1, 1)))
    with pytest.raises(ValueError, match="at most"):
        read_table(str(tmp_path / "big.npy"))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_the_imputation_family_holds_the_pairs_that_hurt_an_imputer(d):
    cands = candidate_pairs(["imputation"], 20, d, 1.0, 100)
    labels = [c.label for c in cands]
    assert len(set(labels)) == len(labels)
    ms = sorted({int(c.label.split()[0][2:]) for c in cands})
    assert ms == [1, 2, 4, 8, 16, 19]
    for c in cands:
        assert c.family is PairFamily.IMPUTATION and c.record == 0
        assert (c.z[0, 0], c.z_prime[0, 0]) == (1.0, -1.0)
        m = int(c.label.split()[0][2:])
        assert np.isnan(c.z[:, 0]).sum() == m and not np.isnan(c.z[:, 1:]).any()
    # capped and sampled like the others
    assert len(candidate_pairs(["imputation"], 20, d, 1.0, 3)) == 3


def test_the_imputation_family_needs_three_records():
    with pytest.raises(ValueError, match="the family 'imputation' needs n >= 3"):
        candidate_pairs(["imputation"], 2, 2, 1.0, 10)
