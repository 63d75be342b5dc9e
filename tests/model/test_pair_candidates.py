"""The worst-case pair search asks the mechanism for its extra candidate records
(``pair_candidates``) instead of reading attribute names: the pair found must be the one the
attribute-name search found.

``data/worst_case_pairs.json`` was recorded by :func:`search_results` on the code before the
change (commit ea0c917, where ``neighbours._mechanism_candidates`` read ``pivot`` and
``threshold`` with ``getattr``); :func:`old_candidates` re-implements that search's candidate
list, so a change in the candidates is caught apart from a change elsewhere in the search.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from audit.model.missingness import MISSINGNESS_KINDS, make_missingness
from audit.model.neighbours import Release, worst_case_pair
from audit.model.queries import make_query

RECORDED = Path(__file__).parent / "data" / "worst_case_pairs.json"
D, N, B = 3, 5, 1.0
MECHANISMS = [(kind, {}) for kind in sorted(MISSINGNESS_KINDS)] + [
    ("mar-pivot", {"pivot": 1, "threshold": 0.3, "rate_low": 0.1, "rate_high": 0.8}),
    ("mar-pivot", {"threshold": 2.5, "rate_low": 0.7, "rate_high": 0.2}),
    ("mcar-fixed", {"observed": 2, "p_star": 0.7}),
    ("mnar-value", {"threshold": 0.5}),
]
QUERIES = {"sum": {}, "linear": {"weights": [1.0, -2.0, 0.5]}, "vector-sum": {},
           "histogram": {}, "clipped-mean": {"clip": 0.6}}
#: (mechanism, its parameters, query, noise): Gaussian only for the sum (its exact pair ε
#: costs root finding; the other queries' Gaussian search is the same code)
CASES = [(kind, mp, qn, noise) for kind, mp in MECHANISMS for qn in QUERIES
         for noise in (("laplace", "gaussian") if qn == "sum" else ("laplace",))]


def _search(kind, mparams, qname, noise, candidates=None):
    q = make_query(qname, **QUERIES[qname])
    m = make_missingness(kind, **mparams)
    return worst_case_pair(q, m, D, N, B, Release(noise, 0.8), candidates,
                           pilot_trials=500, seed=3)


def search_results() -> list[dict]:
    """The pair the default search finds in every case (what the JSON file records)."""
    out = []
    for kind, mp, qn, noise in CASES:
        p = _search(kind, mp, qn, noise)
        out.append({"mechanism": kind, "mparams": mp, "query": qn, "noise": noise,
                    "z": p.z[0].tolist(), "z_prime": p.z_prime[0].tolist(),
                    "score": p.score})
    return out


def old_candidates(query, missingness, d: int, bound: float) -> np.ndarray:
    """The default candidate list of the search before the change (``getattr`` of ``pivot``
    and ``threshold``), kept here as the oracle of :meth:`pair_candidates`."""
    base = np.asarray(query.candidate_records(d, bound), dtype=np.float64)
    extra = []
    pivot = getattr(missingness, "pivot", None)
    thr = getattr(missingness, "threshold", None)
    if pivot is not None and thr is not None and pivot < base.shape[1]:
        for v in (min(max(thr, -bound), bound), -bound, bound):
            for r in base:
                s = r.copy()
                s[pivot] = v
                extra.append(s)
    rows = [*base, *extra, np.full(d, np.nan)]
    cands = np.unique(np.nan_to_num(np.array(rows), nan=np.inf), axis=0)
    cands[np.isinf(cands)] = np.nan
    return cands


@pytest.mark.parametrize(("case", "recorded"),
                         list(zip(CASES, json.loads(RECORDED.read_text()), strict=True)))
def test_the_search_finds_the_pair_it_found_before(case, recorded):
    kind, mp, qn, noise = case
    assert (recorded["mechanism"], recorded["mparams"], recorded["query"],
            recorded["noise"]) == (kind, mp, qn, noise)
    pair = _search(*case)
    np.testing.assert_array_equal(pair.z[0], recorded["z"])
    np.testing.assert_array_equal(pair.z_prime[0], recorded["z_prime"])
    assert pair.score == recorded["score"]  # bit-identical


@pytest.mark.parametrize(("kind", "mp"), MECHANISMS)
@pytest.mark.parametrize("qname", sorted(QUERIES))
def test_default_candidates_are_the_attribute_name_candidates(kind, mp, qname):
    from audit.model.neighbours import _candidate_records

    q, m = make_query(qname, **QUERIES[qname]), make_missingness(kind, **mp)
    np.testing.assert_array_equal(_candidate_records(q, m, D, B, None),
                                  old_candidates(q, m, D, B))


def test_only_the_pivot_mechanism_adds_candidates():
    rows = make_query("sum").candidate_records(D, B)
    for kind in MISSINGNESS_KINDS:
        extra = make_missingness(kind).pair_candidates(rows, B)
        assert extra.shape == ((3 * len(rows), D) if kind == "mar-pivot" else (0, D)), kind
    extra = make_missingness("mar-pivot", pivot=2, threshold=-7.0).pair_candidates(rows, B)
    np.testing.assert_array_equal(np.unique(extra[:, 2]), [-B, B])  # threshold clipped to -B
    np.testing.assert_array_equal(extra[:, :2], np.tile(rows[:, :2], (3, 1)))


def test_pair_candidates_validates():
    m = make_missingness("mar-pivot", pivot=2)
    with pytest.raises(ValueError, match="records must have shape"):
        m.pair_candidates(np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="pivot must be in"):
        m.pair_candidates(np.zeros((2, 2)), 1.0)
    with pytest.raises(ValueError, match="bound must be"):
        m.pair_candidates(np.zeros((2, 3)), 0.0)


def test_the_pivot_candidates_change_the_pair():
    """Without the mechanism's candidates the histogram search finds a weaker pair: the
    recorded results exercise ``pair_candidates``."""
    q, m = make_query("histogram"), make_missingness("mar-pivot")
    base = np.vstack([q.candidate_records(D, B), np.full(D, np.nan)])
    without = worst_case_pair(q, m, D, N, B, Release("laplace", 0.8), base, pilot_trials=500,
                              seed=3)
    assert without.score < _search("mar-pivot", {}, "histogram", "laplace").score
