"""OpenDP's NaN/null reports (#2935, #2936, #2938, #2939, #2940) checked on the installed OpenDP.

One test per report: what 0.16 does (by experiment on the wheel) and, where the report is a
release on a dataset with missing values, its audit with the verdict expected from the source
(``audit/adapters/opendp.py``, "Known NaN/null reports"; the cases, pairs and margins are in
``experiments/opendp_issues.py``, which writes ``results/opendp_issues.md``). A refutation is
asserted with ``pytest.raises(AssertionError)`` around ``assert_private`` (a proof at 95%); a
claim that holds by its ``AuditResult``. OpenDP is not seedable, so these are ``statistical``:
each default test runs 500 calls per side, its ``slow`` twin 20,000, with the margins stated.

The Polars queries of #2936, #2938, #2939 and #2940 need ``opendp[polars]``; their tests skip
where polars is not installed (it is not in this project's environment: they were not run here).
"""

from __future__ import annotations

import math

import pytest

from audit.testing import assert_private
from experiments import opendp_issues as issues

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")
pytestmark = pytest.mark.statistical

NAN = float("nan")
#: calls per side: the default twin and the slow one
TRIALS = [500, pytest.param(20_000, marks=pytest.mark.slow)]


def _case(issue: int, cases) -> issues.Case:
    (case,) = (c for c in cases if c.issue == issue)
    return case


def _refuted(case: issues.Case, trials: int) -> None:
    with pytest.raises(AssertionError, match="is not"):
        assert_private(case.make(), pair=case.pair, epsilon=issues.EPSILON, trials=trials)


def _holds(case: issues.Case, trials: int) -> None:
    result = assert_private(case.make(), pair=case.pair, epsilon=issues.EPSILON, trials=trials)
    assert not result.violations
    # the pair's true loss is ε/2 (the case's margin): a 95% lower bound stays below the claim
    assert 0.0 <= result.eps_lower < result.eps_claim == issues.EPSILON


def _polars_case(issue: int) -> issues.Case:
    pytest.importorskip("polars", reason="the report's query needs opendp[polars]")
    return _case(issue, issues.polars_cases())


@pytest.mark.parametrize("trials", TRIALS)
def test_2935_float_noise_reads_nan_as_zero(trials):
    """0.16 still maps NaN to 0 before the noise (make_float_to_bigint, unwrap_or(ZERO)): a
    scale-1e-3 Laplace on NaN releases ≈ 0, where 5.0 releases ≈ 5 (|noise| > 0.1 has
    probability e^-100). The clamp errs loudly on NaN, so the NaN reaches the noise only past a
    domain declared NaN-free; then the whole sum is read as 0 and the claim falls."""
    m = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                          scale=1e-3)
    assert abs(m(NAN)) < 0.1 and abs(m(5.0) - 5.0) < 0.1
    with pytest.raises(dp.OpenDPException, match="non-nan"):
        dp.m.make_laplace(dp.atom_domain(T=float, nan=True), dp.absolute_distance(T=float),
                          scale=1.0)  # the domain refuses NaN at construction
    clamp = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()) \
        >> dp.t.then_clamp((0.0, 1.0))
    with pytest.raises(dp.OpenDPException, match="clamping"):
        clamp([1.0, NAN])
    _refuted(_case(2935, issues.core_cases()), trials)


@pytest.mark.parametrize("trials", TRIALS)
def test_2936_core_impute_refuses_a_nan_constant_and_the_imputed_sum_holds(trials):
    """The core counterpart of fill_null(NaN): make_impute_constant refuses a NaN constant
    (impute/mod.rs), so the core sum never sees one; imputing 0.5 on the report's pair, the
    claim holds (the pair's loss is ε/2)."""
    with pytest.raises(dp.OpenDPException, match="Constant may not be null"):
        dp.t.make_impute_constant(dp.vector_domain(dp.atom_domain(T=float, nan=True)),
                                  dp.symmetric_distance(), NAN)
    _holds(_case(2936, issues.core_cases()), trials)


def test_2936_polars_fill_null_nan_sum_is_refuted():
    _refuted(_polars_case(2936), 2000)


@pytest.mark.parametrize("trials", TRIALS)
def test_2938_core_cast_declares_its_nulls_and_the_count_holds(trials):
    """The core make_cast is non-strict too, but declares its output an OptionDomain, so the
    count of the non-null entries needs drop_null and is charged (opendp:count[cast]): on the
    report's pair (16 against 15 non-null) the claim holds."""
    cast = dp.t.make_cast(dp.vector_domain(dp.atom_domain(T=float, nan=True)),
                          dp.symmetric_distance(), TOA=int)
    assert "OptionDomain" in str(cast.output_domain)
    _holds(_case(2938, issues.core_cases()), trials)


def test_2938_polars_non_strict_cast_count_is_refuted():
    _refuted(_polars_case(2938), 2000)


def test_2939_core_find_bin_puts_nan_in_the_last_bin_never_null():
    """Polars' cut maps NaN to null; the core counterpart, make_find_bin, sends NaN to the
    last bin (every comparison with NaN is false) and its output (usize) has no nulls, so no
    count of non-null bins can leak. No core audit: the count is the length, whatever the NaN."""
    edges = [0.0, 1.5]
    find = dp.t.make_find_bin(dp.vector_domain(dp.atom_domain(T=float, nan=True)),
                              dp.symmetric_distance(), edges=edges)
    assert find([NAN, -1.0, 1.0, 2.0]) == [len(edges), 0, 1, len(edges)]
    assert "OptionDomain" not in str(find.output_domain)


def test_2939_polars_cut_count_is_refuted():
    _refuted(_polars_case(2939), 2000)


def test_2940_polars_modulo_by_zero_count_is_refuted():
    """Polars only: the core API has no modulo transformation."""
    assert not any("mod" in name.lower() for name in dir(dp.t) if name.startswith("make_"))
    _refuted(_polars_case(2940), 2000)


def test_the_report_table_records_the_expected_verdicts():
    """The committed results file agrees with the cases' expectations, at its budget."""
    text = (issues.ROOT / "results" / "opendp_issues.md").read_text()
    assert "UNEXPECTED" not in text
    for case in issues.core_cases():
        row = next(line for line in text.splitlines() if line.startswith(f"| #{case.issue} |"))
        assert f"| {case.expected.value} | {case.expected.value} |" in row
        eps = float(row.split("|")[7])  # the ε_lower column
        assert (eps > 1.0) is (case.expected is issues.Verdict.REFUTED) and math.isfinite(eps)
