"""OpenDP's NaN/null reports (#2935, #2936, #2938, #2939, #2940) checked on the installed OpenDP.

One test per report: what 0.16 does (by experiment on the wheel) and, where the report is a
release on a dataset with missing values, its audit with the verdict expected from the source
(``audit/adapters/opendp.py``, "Known NaN/null reports"; the cases, pairs and margins are in
``experiments/opendp_issues.py``, which writes ``results/opendp_issues.md``). A refutation is
asserted with ``pytest.raises(AssertionError)`` around ``assert_private`` (a proof at 95%); a
claim that holds by its ``AuditResult``. OpenDP is not seedable, so these are ``statistical``:
each default test runs 500 calls per side, its ``slow`` twin 20,000, with the margins stated.

The Polars queries of #2936, #2938, #2939 and #2940 need ``opendp[polars]`` (in the
``libraries`` and ``test`` extras); their tests skip where polars is not installed. Each runs
500 calls per side (about 1 ms per call), as the core tests: ε_lower ≈ 4.9 against the claim 1.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
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
        assert_private(case.make(), pair=case.pair, trials=trials)  # the case's own claim


def _holds(case: issues.Case, trials: int) -> None:
    result = assert_private(case.make(), pair=case.pair, trials=trials)
    assert not result.violations
    # the pair's true loss is ε/2 (the case's margin): a 95% lower bound stays below the claim
    assert 0.0 <= result.eps_lower < result.eps_claim == issues.EPSILON


def _polars_case(issue: int, api: str = "polars") -> issues.Case:
    pytest.importorskip("polars", reason="the report's query needs opendp[polars]")
    (case,) = (c for c in issues.polars_cases() if c.issue == issue and c.api == api)
    return case


def _exact_counts(issue: int) -> None:
    """The count query is charged ε = 0 (count of a column declared non-null under invariant
    lengths: the public length) yet counts 16 on z and 15 on z', with no noise."""
    release = issues.PolarsRelease(issue)
    assert release.charged == 0.0
    z, z_prime = issues._polars_pair(issue)
    assert {release(z, None) for _ in range(5)} == {16.0}
    assert {release(z_prime, None) for _ in range(5)} == {15.0}


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
    """fill_null(NaN) keeps the column NaN-free (expr_fill_null/mod.rs): the query is charged
    ε ≈ 2 (scale 1, sensitivity 2), but z' (record 0 null) releases the NaN sum read as 0."""
    case = _polars_case(2936)
    release = issues.PolarsRelease(2936)
    assert release.charged == pytest.approx(2.0, rel=1e-6)
    z, z_prime = case.pair
    assert abs(np.mean([release(z_prime, None) for _ in range(200)])) < 0.5  # 0 + noise
    assert np.mean([release(z, None) for _ in range(200)]) > 99.0  # 100 + noise
    _refuted(case, 500)  # ε_lower ≈ 4.9 at 500 calls (ten re-audits: 4.89–4.91)


def test_2936_polars_dp_sum_form_is_refused_at_construction():
    """The same query through .dp.sum, whose own midpoint fill would absorb the NaN, is not
    built by 0.16: the refusal is the verdict (recorded with its message)."""
    case = _polars_case(2936, "polars .dp.sum")
    assert case.expected is issues.Verdict.REFUSED
    with pytest.raises(dp.OpenDPException, match="Expr is not recognized"):
        case.make()
    result = issues.run_case(case, trials=100, seed=0)
    assert issues.verdict(result) is issues.Verdict.REFUSED
    assert "refused at construction with MakeTransformation" in result.describe()


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
    _exact_counts(2938)
    _refuted(_polars_case(2938), 500)


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
    _exact_counts(2939)
    _refuted(_polars_case(2939), 500)


def test_2940_polars_modulo_by_zero_count_is_refuted():
    """Polars only: the core API has no modulo transformation."""
    assert not any("mod" in name.lower() for name in dir(dp.t) if name.startswith("make_"))
    _exact_counts(2940)
    _refuted(_polars_case(2940), 500)


def test_the_report_table_records_the_expected_verdicts():
    """The committed results file agrees with the cases' expectations, at its budget, for the
    core cases and (where polars is installed, as when the file was written) the Polars ones."""
    text = (issues.ROOT / "results" / "opendp_issues.md").read_text()
    assert "UNEXPECTED" not in text
    cases = issues.core_cases()
    if importlib.util.find_spec("polars") is not None:
        cases += issues.polars_cases()
        assert "polars not installed" not in text and "Not run here" not in text
    for case in cases:
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| #{case.issue} | {case.api} |"))
        assert f"| {case.expected.value} | {case.expected.value} |" in row
        cell = row.split("|")[7].strip()  # the ε_lower column
        if case.expected is issues.Verdict.REFUSED:
            assert cell == "—"
            continue
        eps = float(cell)
        assert (eps > 1.0) is (case.expected is issues.Verdict.REFUTED) and math.isfinite(eps)
