"""Estimation layer: histogram counts → statistically valid empirical bounds.

- :mod:`.binomial`: exact one-sided Clopper–Pearson bounds, the ε bound of one region;
- :mod:`.regions`: threshold regions, their choice (model, pilot, Bonferroni grid) and bounds;
- :mod:`.tradeoff_points`: simultaneous confidence points on trade-off curves.
"""

from audit.estimation.binomial import cp_lower, cp_upper, eps_lower_bound
from audit.estimation.regions import (
    Direction,
    EpsLowerResult,
    Region,
    grid_bound,
    region_bound,
    select_region_by_model,
    select_region_on_pilot,
)
from audit.estimation.tradeoff_points import (
    TradeoffPoints,
    empirical_tradeoff_points,
    gdp_mu_lower_bound,
    tradeoff_violation,
)

__all__ = [
    "Direction",
    "EpsLowerResult",
    "Region",
    "TradeoffPoints",
    "cp_lower",
    "cp_upper",
    "empirical_tradeoff_points",
    "eps_lower_bound",
    "gdp_mu_lower_bound",
    "grid_bound",
    "region_bound",
    "select_region_by_model",
    "select_region_on_pilot",
    "tradeoff_violation",
]
