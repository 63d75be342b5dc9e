"""OpenDP 0.16 releases for the reports the NaN table's findings audit (#2929, #2935's policies,
#2944, #2949), beside those of ``experiments/opendp_issues.py`` (#2935-#2940).

Each class is one release as the report writes it, made for the audit's one dataset (an
(n, d) float array) and picklable by its parameters (OpenDP's objects are rebuilt). OpenDP
draws its noise from its own CSPRNG: the audit's generator is unused. Causes with file and
line (0.16's ``rust/src``, the sdist ``opendp-0.16.0``): ``experiments/nan_findings.py``.
"""

from __future__ import annotations

import numpy as np

from audit.model.implementation import CallableImplementation, Claim
from audit.model.raised import RaisedAsOutput

__all__ = ["EPSILON", "POLICIES", "imputed_sum", "policy_sum", "cut_codes_sum",
           "redefined_truncation_count"]

EPSILON = 1.0
#: #2935's policies: what the noise mechanism does with a NaN aggregate (``zero``: 0.16's
#: own, the NaN read as 0; ``raise``: an error; ``clamp``: the clamp maps a NaN entry to its
#: lower bound before the sum, so that no NaN reaches the noise)
POLICIES = ("zero", "raise", "clamp")


def _prelude():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _laplace_at(dp, t, epsilon: float):
    """``t`` >> Laplace noise of the scale OpenDP's map gives ε at d_in = 2 (a substitution)."""
    scale = dp.binary_search_param(lambda s: t >> dp.m.then_laplace(scale=s), d_in=2,
                                   d_out=epsilon)
    return t >> dp.m.then_laplace(scale=scale), scale


class ImputedSum:
    """#2929: ``make_impute_uniform_float`` with bounds (0, ∞) on a float vector that may hold
    NaN, then clamp (0, 1), the (unsized) sum and Laplace noise at ε = 1. A NaN entry makes
    the imputer draw from Uniform(0, ∞): rand panics inside an FFI function that cannot
    unwind, and the process aborts."""

    def __init__(self) -> None:
        dp = _prelude()
        space = (dp.vector_domain(dp.atom_domain(T=float)), dp.symmetric_distance())
        t = (space >> dp.t.then_impute_uniform_float(bounds=(0.0, float("inf")))
             >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum())
        self._m, self.scale = _laplace_at(dp, t, EPSILON)

    def __call__(self, data, rng):  # rng unused: OpenDP is not seedable
        return float(self._m(np.asarray(data, dtype=float).reshape(-1).tolist()))

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self.__init__()


def imputed_sum() -> CallableImplementation:
    """#2929's release, a process abort counted as the output "raised" (its own process)."""
    release = ImputedSum()
    return CallableImplementation(
        RaisedAsOutput(release, own_process=True),
        Claim(EPSILON, 0.0, f"OpenDP impute_uniform_float((0, inf)) >> clamp (0, 1) >> sum >> "
                            f"Laplace scale {release.scale:.4g}; an abort is the output "
                            f"'raised'"),
        name="opendp (#2929)")


class PolicySum:
    """#2935's release, ``make_sum`` on a NaN-free bounded domain (0, 1) of size n + Laplace
    at ε = 1, under one of :data:`POLICIES` for a NaN in the data (module docstring)."""

    def __init__(self, n: int, policy: str) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got policy={policy!r}")
        dp = _prelude()
        space = (dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=n),
                 dp.symmetric_distance())
        self._sum = space >> dp.t.then_sum()
        self._m, self.scale = _laplace_at(dp, self._sum, EPSILON)
        self._noise = dp.m.make_laplace(dp.atom_domain(T=float, nan=False),
                                        dp.absolute_distance(T=float), scale=self.scale)
        self.n, self.policy = n, policy

    def __call__(self, data, rng):  # rng unused: OpenDP is not seedable
        x = np.asarray(data, dtype=float).reshape(-1)
        if self.policy == "clamp":
            return float(self._m(np.where(np.isnan(x), 0.0, x).tolist()))
        if self.policy == "zero":
            return float(self._m(x.tolist()))
        total = self._sum(x.tolist())
        if np.isnan(total):
            raise ValueError("a NaN reached the noise mechanism")
        return float(self._noise(total))

    def __getstate__(self) -> dict:
        return {"n": self.n, "policy": self.policy}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)


def policy_sum(n: int, policy: str) -> CallableImplementation:
    """#2935's release under ``policy``; ``raise``'s error counted as the output "raised"."""
    release = PolicySum(n, policy)
    wrapped = RaisedAsOutput(release, catch=(ValueError,)) if policy == "raise" else release
    return CallableImplementation(
        wrapped, Claim(EPSILON, 0.0, f"OpenDP make_sum on a NaN-free bounded domain (0, 1), "
                                     f"size {n}, Laplace scale {release.scale:.4g}, NaN policy "
                                     f"{policy!r}"),
        name=f"opendp (#2935, {policy})")


class CutCodesSum:
    """#2944: the Polars query ``cut([1.0]).to_physical().dp.sum((0, 1), scale=2)`` on a
    NaN-free float column of at most n rows: the sum of the bins' codes, which OpenDP takes
    for a row-by-row map (stability 1)."""

    def __init__(self, n: int) -> None:
        import polars as pl

        dp = _prelude()
        query = pl.LazyFrame(schema={"x": pl.Float64}).select(
            pl.col("x").cut([1.0]).to_physical().dp.sum((0, 1), scale=2.0))
        domain = dp.with_margin(
            dp.lazyframe_domain([dp.series_domain("x", dp.atom_domain(T=float, nan=False))]),
            dp.polars.Margin(max_length=n))
        self._m = dp.m.make_private_lazyframe(
            domain, dp.frame_distance(dp.symmetric_distance()), dp.max_divergence(), query)
        #: what OpenDP charges for one substitution (symmetric distance 2)
        self.charged = float(self._m.map([dp.polars.Bound(per_group=2)]))
        self.n = n

    def __call__(self, data, rng):  # rng unused: OpenDP is not seedable
        import polars as pl

        x = np.asarray(data, dtype=float)[:, 0]
        return float(self._m(pl.LazyFrame({"x": x})).collect().item())

    def __getstate__(self) -> dict:
        return {"n": self.n}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)


def cut_codes_sum(n: int) -> CallableImplementation:
    """#2944's release claiming what OpenDP charges for one substitution."""
    release = CutCodesSum(n)
    return CallableImplementation(
        release, Claim(release.charged, 0.0, f"OpenDP Polars cut().to_physical().dp.sum, "
                                             f"charged ε = {release.charged:g} per "
                                             f"substitution"),
        name="opendp-polars (#2944)")


class RedefinedTruncation:
    """#2949: one record per identifier, (id, g_1, ..., g_k): k rows (id, g_j) of the frame
    (the privacy unit is the identifier). The Polars query truncates to one row per (id, g)
    and at most ``groups`` groups per id, then redefines g = 0 (every group merged into one)
    and counts the rows with ``dp.len(scale=10)`` under zCDP, identifier ``id``. OpenDP keeps
    the truncation's bounds on the redefined column: it charges a count of one row per id."""

    SCALE = 10.0

    def __init__(self, groups: int, delta: float) -> None:
        import polars as pl

        dp = _prelude()
        counts = (pl.LazyFrame(schema={"id": pl.Int64, "g": pl.Int64})
                  .filter(pl.int_range(pl.len()).over("id", "g") < 1)
                  .filter(pl.struct("g").rank("dense").over("id") < groups + 1)
                  .with_columns(g=pl.lit(0, dtype=pl.Int64))
                  .group_by("g").agg(dp.len(scale=self.SCALE, signed=False)))
        query = pl.LazyFrame({"g": [0]}).join(counts, on="g", how="left")
        domain = dp.lazyframe_domain([dp.series_domain("id", dp.atom_domain(T="i64")),
                                      dp.series_domain("g", dp.atom_domain(T="i64"))])
        self._m = dp.m.make_private_lazyframe(
            domain, dp.symmetric_id_distance(identifier=pl.col("id")),
            dp.zero_concentrated_divergence(), query)
        approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(self._m), delta)
        #: (ε, δ) OpenDP charges for one identifier removed and one added (d_in = 2)
        self.charged = tuple(float(v) for v in approx.map(2))
        self.groups, self.delta = groups, delta

    def __call__(self, data, rng):  # rng unused: OpenDP is not seedable
        import polars as pl

        x = np.asarray(data, dtype=float).astype(np.int64)
        frame = pl.LazyFrame({"id": np.repeat(x[:, 0], x.shape[1] - 1),
                              "g": x[:, 1:].reshape(-1)})
        return float(self._m(frame).collect()["len"].item())

    def __getstate__(self) -> dict:
        return {"groups": self.groups, "delta": self.delta}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)


def redefined_truncation_count(groups: int, delta: float) -> CallableImplementation:
    """#2949's release claiming OpenDP's (ε, δ) for one identifier's rows substituted."""
    release = RedefinedTruncation(groups, delta)
    eps, dlt = release.charged
    return CallableImplementation(
        release, Claim(eps, dlt, f"OpenDP Polars truncation then with_columns(g=0), dp.len "
                                 f"scale {release.SCALE:g} (zCDP -> (ε, δ)), charged ε = "
                                 f"{eps:.4g} at δ = {dlt:g} for d_in = 2"),
        name="opendp-polars (#2949)")
