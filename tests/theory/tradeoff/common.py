"""Grids, tolerances and strategies shared by the trade-off tests."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

from audit.theory.tradeoff import (
    CallableTradeoff,
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    TradeoffFunction,
)

# α grid: uniform plus log-spaced towards 0 and 1 (the steep ends of G_μ and Laplace)
DECADES = 10.0 ** -np.arange(1, 13)  # 1e-1 … 1e-12
GRID = np.unique(np.concatenate([np.linspace(0.0, 1.0, 1001), DECADES, 1.0 - DECADES,
                                 np.logspace(-15, -0.3, 120), 1.0 - np.logspace(-15, -0.3, 120)]))

TOL_CLOSED = 1e-6  # required agreement of closed forms with the numerical C_p (brief)
TOL_NUM = 1e-12  # round-off level used for shape properties


def base_strategy():
    dp = st.builds(DPTradeoff, st.floats(0.0, 6.0), st.sampled_from([0.0, 1e-6, 0.05, 0.3]))
    gauss = st.builds(GaussianTradeoff, st.floats(0.0, 6.0))
    lap = st.builds(LaplaceTradeoff, st.floats(0.0, 6.0))
    return st.one_of(dp, gauss, lap)



#: 20 derandomized examples per property, the same 20 every run
PROP = settings(derandomize=True, max_examples=20, deadline=None)
UNIFORM = np.linspace(0.0, 1.0, 801)


def hidden(f: TradeoffFunction) -> CallableTradeoff:
    """The same curve without closed forms, slope or complement: the generic numeric path."""
    return CallableTradeoff(lambda a: f(a), symmetric=True, name="hidden")
