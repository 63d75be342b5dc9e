"""Release plans (audit.theory.plans, ``bound --plan``; docs/THEORY.md §10.6)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from audit.pipeline.plan_file import plan_from_dict
from audit.theory.plans import Plan, PlannedRelease, Table, account_plan
from audit.theory.releases import shared_masks_epsilon
from audit.theory.tradeoff import GaussianTradeoff

ROOT = Path(__file__).resolve().parents[2]
MU = 1 / math.sqrt(2 * math.log(1.25e5))


def _g(count, name="g"):
    return PlannedRelease(name, "gaussian", 1.0, 1e-5, count)


def _lap(eps, count, name="l"):
    return PlannedRelease(name, "laplace", eps, 0.0, count)


def test_one_shared_gaussian_table_is_the_closed_form():
    # two Gaussian queries from one table: C_q(G_sqrt(k1 mu^2 + k2 mu^2)) in closed form
    plan = Plan((Table("t", 0.1, "shared", (_g(60, "a"), _g(40, "b"))),), 1e-5)
    exact = shared_masks_epsilon(GaussianTradeoff(10 * MU), 0.1, 1e-5)
    got = account_plan(plan)
    assert exact <= got.epsilon <= exact + 100 * 1e-4  # the PLD's rounding: at most k·h
    # the per-release amplified composition understates a shared table 8-fold: not a bound
    assert got.fresh_composition < got.epsilon / 8


def test_two_tables_compose_as_one_table_of_both():
    """The curve step (profile -> lower-bound curve -> discrete pair) loses almost nothing:
    two fresh tables of 20 releases against one of 40 (the same mechanism)."""
    a = Table("a", 0.5, "fresh", (_lap(0.5, 20),))
    b = Table("b", 0.5, "fresh", (_lap(0.5, 20),))
    both = Table("c", 0.5, "fresh", (_lap(0.5, 40),))
    two = account_plan(Plan((a, b), 1e-5)).epsilon
    one = account_plan(Plan((both,), 1e-5)).epsilon
    assert one - 1e-9 <= two <= one + 1e-3


def test_adding_a_table_never_lowers_epsilon():
    shared = Table("s", 0.1, "shared", (_g(50), _lap(0.1, 10)))
    fresh = Table("f", 0.5, "fresh", (_lap(0.5, 20),))
    res = account_plan(Plan((shared, fresh), 1e-5))
    alone = dict(res.tables)
    assert res.epsilon >= max(alone.values())
    assert res.epsilon <= sum(alone.values())  # and composes below basic composition


def test_the_shipped_plan_runs_from_the_command_line():
    res = subprocess.run([sys.executable, "-m", "audit", "bound", "--plan",
                          str(ROOT / "experiments" / "plans" / "survey.toml"), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert '"epsilon"' in res.stdout and "NOT a bound" in res.stdout


@pytest.mark.parametrize("doc,match", [
    ({"tables": []}, "at least one"),
    ({"target_delta": 1e-5, "tables": [{"name": "t", "releases": [
        {"noise": "laplace", "epsilon": 1.0}]}]}, "needs p_star"),
    ({"target_delta": 1e-5, "tables": [{"name": "t", "p_star": 0.5, "releases": [
        {"noise": "gaussian", "epsilon": 2.0, "delta": 1e-5}]}]}, "epsilon"),
    ({"target_delta": 1e-5, "tables": [{"name": "t", "p_star": 0.5, "colour": 1,
                                        "releases": []}]}, "unknown key tables"),
    ({"target_delta": 0.0, "tables": [{"name": "t", "p_star": 0.5, "releases": [
        {"noise": "laplace", "epsilon": 1.0}]}]}, "target_delta"),
    ({"target_delta": 1e-5, "tables": [{"name": "t", "p_star": 0.5, "masks": "both",
                                        "releases": [{"noise": "laplace", "epsilon": 1.0}]}]},
     "masks"),
])
def test_bad_plans_are_refused_naming_what_is_wrong(doc, match):
    with pytest.raises(ValueError, match=match):
        plan_from_dict(doc)


def _one_table(statistic: str, noise: str, epsilon: float, delta: float, count: int, q: float,
               masks: str = "shared"):
    from audit.theory.plans import Plan, PlannedRelease, Table

    rel = PlannedRelease("r", noise, epsilon, delta, count, statistic)
    return Plan((Table("t", q, masks, (rel,)),), 1e-5)


def test_a_histogram_release_matches_the_exact_histogram_worst_case():
    """A Laplace histogram with a NA bin, 10 releases from one table: the plan's C_{p*} of
    Lap_{ε/2}^{⊗2k} is the pair (category, NA record) exactly (THEORY §10.9), so it lies just
    above the accountant's certified bracket of the whole setting, within 0.1 %."""
    from audit.theory.histogram import HistogramSetting, histogram_worst_case
    from audit.theory.plans import account_plan

    plan = account_plan(_one_table("histogram", "laplace", 1.0, 0.0, 10, 0.3))
    exact = histogram_worst_case(HistogramSetting("laplace", 2.0, 0.3, 10), 1e-5)
    assert exact.lower <= plan.epsilon <= exact.epsilon * 1.001


def test_a_mean_release_bounds_the_exact_mean_worst_case():
    """A Gaussian mean with a private count (sum and count at (ε/2, δ/2)): the plan's curve
    G_{√2 μ′} is a valid bound, above the exact worst case of THEORY §10.8; at q = 1 (no
    missingness) the plan is the composition of the two halves."""
    from audit.theory.observed_mean import ObservedMeanSetting, observed_mean_worst_case
    from audit.theory.plans import account_plan

    plan = account_plan(_one_table("mean", "gaussian", 1.0, 1e-5, 100, 0.1))
    exact = observed_mean_worst_case(
        ObservedMeanSetting("gaussian", 1.0, 1e-5, (-1.0, 1.0), 0.1, 100), 1e-5)
    assert plan.epsilon >= exact.epsilon
    assert plan.epsilon == pytest.approx(3.52212, abs=1e-3)


def test_a_fresh_histogram_amplifies_the_release_curve_once_per_release():
    """Fresh masks: C_{p*} of each release's whole curve Lap_{ε/2}^{⊗2} (not of each bin)."""
    from audit.theory.histogram import HistogramSetting, histogram_worst_case
    from audit.theory.plans import account_plan

    plan = account_plan(_one_table("histogram", "laplace", 1.0, 0.0, 10, 0.3, "fresh"))
    bracket = histogram_worst_case(HistogramSetting("laplace", 2.0, 0.3, 10, "fresh"), 1e-5)
    assert bracket.lower <= plan.epsilon  # a bound on the setting
    one_bin = account_plan(_one_table("sum", "laplace", 0.5, 0.0, 20, 0.3, "fresh"))
    assert plan.epsilon > one_bin.epsilon  # amplifying each bin apart would be too small


@pytest.mark.parametrize("kwargs,match", [
    ({"statistic": "median"}, "statistic must be one of sum, histogram, mean"),
    ({"noise": "gaussian", "delta": 1e-5, "epsilon": 1.5}, "epsilon"),
    ({"noise": "gaussian", "delta": 1e-5, "epsilon": 2.5, "statistic": "mean"}, "epsilon"),
])
def test_planned_release_refusals(kwargs, match):
    from audit.theory.plans import PlannedRelease

    args = {"name": "r", "noise": "laplace", "epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        PlannedRelease(**args)
