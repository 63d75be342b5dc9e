"""OpenDP's NaN/null reports (GitHub #2935, #2936, #2938, #2939, #2940) audited on OpenDP 0.16.

Each report is a case: the release it describes, written for the installed OpenDP, on its own
neighbouring pair (NaN = missing), with the verdict expected from reading the 0.16 source
(``audit/adapters/opendp.py``, section "Known NaN/null reports", has the causes with file and
line). Four of the five reports are about the Polars API (``opendp[polars]``, polars 1.36.1, in
the ``libraries`` extra): their own queries are audited (``polars_cases``), beside the core
(non-Polars) counterpart of the same query where one exists (``core_cases``) and #2936's query
written with OpenDP's ``.dp.sum`` shortcut (refused at construction by 0.16: a refusal is a
verdict of its own, recorded with OpenDP's message). Where polars is not installed the Polars
cases are listed as not run.

Run (writes ``results/opendp_issues.md``; not part of ``python -m audit suite``)::

    PYTHONPATH=. python experiments/opendp_issues.py [--trials 20000] [--seed 0]

OpenDP draws its noise from its own CSPRNG, so the seed fixes the audit's pilot split and
region choice, not the releases: each case states the margin by which its verdict is stable.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import platform
from collections.abc import Callable
from enum import Enum
from importlib import metadata
from pathlib import Path

import numpy as np

from audit.adapters import make_implementation
from audit.enums import CeilingKind
from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import config_from_dict
from audit.pipeline.implementation import ImplementationSubject
from audit.pipeline.results import AuditResult, atomic_write
from audit.pipeline.runner import run_audit

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "opendp_issues.md"
EPSILON = 1.0


class Verdict(Enum):
    """What an audit says about the claim."""

    REFUTED = "claim refuted"
    HOLDS = "claim holds"
    REFUSED = "refused at construction"


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A case whose release OpenDP refuses to build: the verdict, with OpenDP's message."""

    message: str

    def describe(self) -> str:
        return (f"not reproducible on OpenDP {metadata.version('opendp')}: refused at "
                f"construction with {self.message}")


def _pair(n: int, missing: bool) -> tuple[np.ndarray, np.ndarray]:
    """z: n records of one entry 1.0; z': the same with record 0 NaN (``missing``) or 0.0."""
    z = np.ones((n, 1))
    z_prime = z.copy()
    z_prime[0] = np.nan if missing else 0.0
    return z, z_prime


class NanFreeSum:
    """#2935's release in the core API: ``make_sum`` on a vector domain declared bounded and
    NaN-free (``atom_domain(bounds=(lo, hi))``, size n), Laplace noise calibrated by OpenDP's
    map at d_in = 2 (one substitution) to ε; the data are passed as they are. OpenDP does not
    check at invocation that the argument lies in the input domain, so a NaN reaches the float
    sum (NaN) and the noise mechanism, which reads it as 0."""

    def __init__(self, n: int, bounds=(0.0, 1.0), epsilon: float = EPSILON) -> None:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        space = (dp.vector_domain(dp.atom_domain(bounds=tuple(map(float, bounds))), size=n),
                 dp.symmetric_distance())
        t = space >> dp.t.then_sum()
        scale = dp.binary_search_param(lambda s: t >> dp.m.then_laplace(scale=s),
                                       d_in=2, d_out=epsilon)
        self.n, self.bounds, self.epsilon, self.scale = n, bounds, epsilon, scale
        self._m = t >> dp.m.then_laplace(scale=scale)

    def __call__(self, data, rng):  # rng unused: OpenDP is not seedable
        return float(self._m(np.asarray(data, dtype=float).reshape(-1).tolist()))

    def __getstate__(self) -> dict:
        return {"n": self.n, "bounds": self.bounds, "epsilon": self.epsilon}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)


def nan_free_sum(n: int) -> CallableImplementation:
    """The #2935 release as an implementation claiming ε per substituted record."""
    release = NanFreeSum(n)
    return CallableImplementation(
        release, Claim(EPSILON, 0.0, f"OpenDP make_sum on a NaN-free bounded domain (0, 1), "
                                     f"Laplace scale {release.scale:.4g}"),
        name="opendp:nan-free-sum (#2935)")


@dataclasses.dataclass(frozen=True)
class Case:
    """One report: the release (``make``), its pair and the verdict expected from the source."""

    issue: int
    api: str
    release: str
    pair_text: str
    make: Callable[[], CallableImplementation]
    pair: tuple[np.ndarray, np.ndarray]
    expected: Verdict
    margin: str


def core_cases() -> tuple[Case, ...]:
    """The cases run with the core API (no polars needed)."""
    return (
        Case(2935, "core", "make_sum on atom_domain(bounds=(0, 1)) (NaN-free declared), n = 20, "
             "Laplace at ε = 1: a NaN makes the sum NaN, the noise reads it as 0",
             "z = twenty 1.0; z' = z with record 0 NaN", lambda: nan_free_sum(20),
             _pair(20, missing=True), Verdict.REFUTED,
             "sums 20 against 0 under scale-1 noise: the pair's loss is 20ε; a flip (ε_lower "
             "≤ 1) needs a third of z's releases below the region's threshold, each with "
             "probability < e^-9"),
        Case(2936, "core counterpart", "opendp:sum, nan='impute' with constant 0.5 (a NaN "
             "constant is refused: 'Constant may not be null'), bounds (0, 1), ε = 1",
             "the issue's frames: z = hundred 1.0; z' = z with record 0 NaN",
             lambda: make_implementation("opendp:sum", epsilon=EPSILON,
                                         params={"bounds": (0.0, 1.0), "constant": 0.5}),
             _pair(100, missing=True), Verdict.HOLDS,
             "sums differ by 0.5, scale 1: the pair's loss is ε/2, so P(ε_lower > 1) ≤ "
             "P(ε_lower > ε/2) ≤ 5% (the bound's validity), far less in fact"),
        Case(2938, "core counterpart", "opendp:count, nan='cast': cast(int) (NaN -> null, "
             "declared Option), drop_null, count, integer Laplace, ε = 1",
             "the issue's frames: z = sixteen 1.0; z' = z with record 0 NaN",
             lambda: make_implementation("opendp:count", epsilon=EPSILON,
                                         params={"nan": "cast"}),
             _pair(16, missing=True), Verdict.HOLDS,
             "counts 16 against 15 under scale-2 noise: the pair's loss is ε/2, so "
             "P(ε_lower > 1) ≤ 5%, far less in fact"),
    )


class PolarsRelease:
    """The Polars query of report ``issue`` as written in it, on the installed
    ``opendp[polars]``: ``make_private_lazyframe`` over the report's domain, invoked on a
    LazyFrame of the audited data (column ``x`` for #2936, #2938, #2939; ``n`` and ``m`` as
    Int64 for #2940). #2936's domain is NaN-free, so a NaN of the data is passed as a null
    (``nan_to_null``), as the report's ``with_null`` frame has it. Not run where polars is not
    installed."""

    def __init__(self, issue: int, shortcut: bool = False) -> None:
        import opendp.prelude as dp
        import polars as pl

        dp.enable_features("contrib")
        if shortcut and issue != 2936:
            raise ValueError(f"shortcut is #2936's .dp.sum form only, got issue={issue}")
        self.issue, self.shortcut = issue, shortcut
        if issue == 2940:
            series = [dp.series_domain(c, dp.option_domain(dp.atom_domain(T="i64")))
                      for c in ("n", "m")]
            expr = (pl.col("n").fill_null(0) % pl.col("m").fill_null(0)).count()
            schema = {"n": pl.Int64, "m": pl.Int64}
        else:
            nan = {"nan": False} if issue == 2936 else {}
            series = [dp.series_domain("x", dp.option_domain(dp.atom_domain(T=float, **nan)))]
            schema = {"x": pl.Float64}
            x = pl.col("x")
            expr = {2936: x.fill_null(float("nan")).clip(0.0, 1.0).sum(),
                    2938: x.fill_null(0.0).cast(pl.Int64, strict=False).count(),
                    2939: x.fill_null(0.0).cut([1.5]).count()}[issue]
        if shortcut:  # .dp.sum fills NaN (and null) with the bounds' midpoint before its clip
            noise = x.fill_null(float("nan")).dp.sum((0.0, 1.0), scale=1)
        else:
            noise = expr.dp.noise(scale=1) if issue == 2936 else expr.dp.noise()
        margin = (dp.polars.Margin(max_length=100) if issue == 2936 else
                  dp.polars.Margin(max_length=16, invariant="lengths"))
        domain = dp.with_margin(dp.lazyframe_domain(series), margin)
        self._m = dp.m.make_private_lazyframe(
            domain, dp.frame_distance(dp.symmetric_distance()), dp.max_divergence(),
            pl.LazyFrame(schema=schema).select(noise), global_scale=1.0)
        #: what OpenDP charges for one substitution (symmetric distance 2)
        self.charged = float(self._m.map([dp.polars.Bound(per_group=2)]))

    def frame(self, data):
        import polars as pl

        x = np.asarray(data, dtype=float)
        if self.issue == 2940:
            return pl.LazyFrame({"n": x[:, 0].astype(np.int64), "m": x[:, 1].astype(np.int64)})
        return pl.LazyFrame({"x": pl.Series("x", x[:, 0], dtype=pl.Float64,
                                            nan_to_null=self.issue == 2936)})

    def __call__(self, data, rng):  # rng unused: OpenDP is not seedable
        return float(self._m(self.frame(data)).collect().item())

    def __getstate__(self) -> dict:
        return {"issue": self.issue, "shortcut": self.shortcut}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["issue"], state["shortcut"])


def polars_release(issue: int, shortcut: bool = False) -> CallableImplementation:
    """Report ``issue``'s Polars query as an implementation claiming max(charged ε, 1): the
    report's pair's outputs differ without noise enough to refute any claim of that size.
    ``shortcut``: #2936's query with ``.dp.sum`` (refused by 0.16 at construction)."""
    release = PolarsRelease(issue, shortcut)
    eps = max(release.charged, EPSILON)
    form = " with .dp.sum" if shortcut else ""
    return CallableImplementation(
        release, Claim(eps, 0.0, f"OpenDP Polars query of #{issue}{form}, charged "
                                 f"ε = {release.charged:g} per substitution"),
        name=f"opendp-polars (#{issue}{form})")


def _polars_pair(issue: int) -> tuple[np.ndarray, np.ndarray]:
    if issue == 2940:  # n % m with m = 0 in record 0 of z' (1 % 1 = 0 is not null)
        z = np.ones((16, 2))
        z_prime = z.copy()
        z_prime[0, 1] = 0.0
        return z, z_prime
    return _pair(100 if issue == 2936 else 16, missing=True)


def polars_cases() -> tuple[Case, ...]:
    """The reports' own Polars queries (need ``opendp[polars]``), each expected refuted, and
    #2936's query with ``.dp.sum``, expected refused at construction by 0.16."""
    texts = {2936: "z = hundred 1.0; z' = z with record 0 null",
             2938: "z = sixteen 1.0; z' = z with record 0 NaN",
             2939: "z = sixteen 1.0; z' = z with record 0 NaN",
             2940: "z: n = m = 1 (sixteen rows); z' = z with m = 0 in row 0"}
    margins = {
        2936: "z releases 100 + noise, z' 0 + noise (the NaN sum read as 0), scale 1: the "
              "pair's loss is 100; the charged ε is 2",
        2938: "charged ε = 0: the count is exact, 16 on z and 15 on z' (no noise), the pair's "
              "loss infinite; a flip needs a release of z in z''s region, impossible",
        2939: "charged ε = 0: the exact count, 16 against 15 (as #2938)",
        2940: "charged ε = 0: the exact count, 16 against 15 (as #2938)",
    }
    cases = tuple(
        Case(issue, "polars", POLARS_ONLY[issue], texts[issue],
             lambda issue=issue: polars_release(issue), _polars_pair(issue), Verdict.REFUTED,
             margins[issue])
        for issue in sorted(POLARS_ONLY))
    shortcut = Case(
        2936, "polars .dp.sum", "the same query with .dp.sum((0, 1), scale=1) in place of "
        "clip-sum-noise: dp_sum fills null, then NaN, with the midpoint before its clip "
        "(expr_dp_sum/mod.rs:133-139), which would make fill_null(NaN) harmless",
        texts[2936], lambda: polars_release(2936, shortcut=True), _polars_pair(2936),
        Verdict.REFUSED, "deterministic: the query is refused at construction on every run "
                         "(dp_sum's fill_nan of fill_null(NaN) is an expression 0.16 does not "
                         "recognise); fill_null(0.0) or nothing builds, and the adapter's "
                         "opendp-polars:sum audits those")
    return (*cases, shortcut)


#: the reports whose release needs the Polars API, with the cause in the 0.16 source (rust/src,
#: transformations/make_stable_expr; ``audit/adapters/opendp.py`` has the details)
POLARS_ONLY = {
    2936: "fill_null(NaN) on a NaN-free column keeps nan=False (expr_fill_null/mod.rs:86-92 "
          "checks only that the fill is not null); clip, sum and the noise of #2935 read the "
          "NaN sum as 0",
    2938: "cast(Int64, strict=False) turns NaN into null but keeps nullable=False "
          "(expr_cast/mod.rs:45-71); count() of a non-null column under invariant lengths is "
          "the public length, charged 0 (expr_count/mod.rs:106-116, 136-140)",
    2939: "cut() maps NaN to null but keeps nullable=False (expr_cut/mod.rs:68-84); count() "
          "is charged 0 as in #2938. Core counterpart: make_find_bin puts NaN in the last bin "
          "(never null), so no count leaks",
    2940: "x % 0 is null but Modulus is not among the null-introducing operators "
          "(expr_binary/mod.rs:106-109); count() is charged 0 as in #2938. The core API has no "
          "modulo transformation",
}


def run_case(case: Case, *, trials: int, seed: int) -> AuditResult | Refusal:
    """The audit of ``case`` (the config ``audit.testing.assert_private`` builds for a pair,
    nothing masked: the pair carries its NaN), returning the result whatever the verdict, or
    the :class:`Refusal` when OpenDP refuses to build the release."""
    from opendp.mod import OpenDPException

    try:
        impl = case.make()
    except OpenDPException as exc:
        return Refusal(" ".join(str(exc).split()))
    z, z_prime = case.pair
    doc = {"scenario": {"mechanism": "laplace", "epsilon": impl.claim.epsilon, "bound": 1.0,
                        "query": "sum"},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "audit": {"trials": trials, "seed": seed, "jobs": 1},
           "pair": {"z": z.tolist(), "z_prime": z_prime.tolist()}}
    cfg = config_from_dict(doc, name=impl.name)
    return run_audit(subject=ImplementationSubject.from_config(cfg, impl))


def verdict(result: AuditResult | Refusal) -> Verdict:
    """REFUSED for a refusal; REFUTED when the audit's claim ceiling is violated."""
    if isinstance(result, Refusal):
        return Verdict.REFUSED
    refuted = any(v.kind is CeilingKind.CLAIM for v in result.violations)
    return Verdict.REFUTED if refuted else Verdict.HOLDS


def _numbers(result: AuditResult | Refusal, spread: list[float]) -> str:
    """The ε_lower, claim and spread cells of a row ("—" for a refusal)."""
    if isinstance(result, Refusal):
        return "— | — | —"
    return (f"{result.eps_lower:.3f} | {result.eps_claim:g} | "
            f"{min(spread):.3f} – {max(spread):.3f}")


def report(rows: list[tuple[Case, AuditResult | Refusal, list[float]]], *, trials: int,
           seed: int,
           stability: tuple[int, int]) -> str:
    """The markdown of ``results/opendp_issues.md``: per case the audit at ``trials`` calls
    and the ε_lower range of ``stability`` = (repeats, calls) audits at seeds 1, 2, …"""
    polars = importlib.util.find_spec("polars") is not None
    lines = ["# OpenDP NaN/null reports audited on the installed OpenDP", "",
             f"OpenDP {metadata.version('opendp')}, numpy {np.__version__}, Python "
             f"{platform.python_version()}; polars "
             f"{metadata.version('polars') if polars else 'not installed'}."
             f" Budget: {trials} calls per side (plus the black-box pilot rule's), seed {seed}, "
             "the policy's confidence (0.95) and attack (auto), nothing masked (each pair "
             "carries its "
             "NaN). OpenDP is not seedable: the seed fixes the audit, not the noise.", "",
             "Produced by `experiments/opendp_issues.py`; causes with file and line: "
             "`audit/adapters/opendp.py`, \"Known NaN/null reports\".", "",
             f"The last column but one is the range of ε_lower over {stability[0]} more audits "
             f"of {stability[1]} calls per side (seeds 1 to {stability[0]}): the default "
             "twins of the tests run that budget.", "",
             "| issue | API | release | pair | expected | verdict | ε_lower | claim "
             f"| ε_lower, {stability[0]} × {stability[1]} calls | margin |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for case, result, spread in rows:
        got = verdict(result)
        lines.append(f"| #{case.issue} | {case.api} | {case.release} | {case.pair_text} | "
                     f"{case.expected.value} | {got.value}"
                     f"{'' if got is case.expected else ' (UNEXPECTED)'} | "
                     f"{_numbers(result, spread)} | {case.margin} |")
    if not polars:
        lines += ["", "Not run here (the reports' own Polars queries need `opendp[polars]`; "
                  "`polars_cases()` runs them, expected refuted, where it is installed):", ""]
        lines += [f"- #{issue}: {text}" for issue, text in sorted(POLARS_ONLY.items())]
    lines += ["", "Witnesses (the region and counts of each audit, or OpenDP's refusal):", ""]
    lines += [f"- #{case.issue} ({case.api}): {result.describe().replace('|', chr(92) + '|')}"
              for case, result, _ in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--repeat-trials", type=int, default=500)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    for name in ("trials", "repeat_trials"):
        if not 1 <= getattr(args, name) <= 20_000:
            raise ValueError(f"{name} must be in [1, 20000], got {name}={getattr(args, name)}")
    if args.repeats < 1:
        raise ValueError(f"repeats must be >= 1, got repeats={args.repeats}")
    cases = core_cases() + (polars_cases() if importlib.util.find_spec("polars") else ())
    rows = []
    for case in cases:
        result = run_case(case, trials=args.trials, seed=args.seed)
        spread = [] if isinstance(result, Refusal) else [
            run_case(case, trials=args.repeat_trials, seed=args.seed + 1 + r).eps_lower
            for r in range(args.repeats)]
        rows.append((case, result, spread))
    text = report(rows, trials=args.trials, seed=args.seed,
                  stability=(args.repeats, args.repeat_trials))
    atomic_write(args.out, lambda fh: fh.write(text.encode()))
    for case, result, _ in rows:
        eps = "" if isinstance(result, Refusal) else f", eps_lower = {result.eps_lower:.3f}"
        print(f"#{case.issue} ({case.api}): {verdict(result).value} (expected "
              f"{case.expected.value}){eps}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
