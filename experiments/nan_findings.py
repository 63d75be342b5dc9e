"""The NaN table's reported findings: library behaviours that no adapter example shows, each
audited on its own pair (``results/nan_regression.json``, key ``findings``; the markdown's
second table).

The adapter rows of ``experiments/nan_regression.py`` audit every example on one pair fixed
by rule. A finding is a release a report describes (an OpenDP issue, a dpmm behaviour), built
as the report writes it for the installed library, audited as a black box on the pair that
shows it, at the table's confidence, and judged by the table's rule
(``experiments/nan_verdicts.py``): ``violates``, ``keeps`` or ``borderline``, and ``not
reproduced on <version>`` where the installed library refuses to build the release (the row
then records the library's message instead of a bound). Each row states its root cause and
the library source lines that decide it, read in the installed version (OpenDP 0.16.0:
``rust/src`` of the sdist ``opendp-0.16.0``, identical in these files to ``main`` at
bc6e18b; dpmm 0.1.9 in its environment).

A release that fails on one side of the pair (raises, or kills its process) has the failure
as one of its outputs (:class:`audit.model.raised.RaisedAsOutput`: the symbol "raised", NaN,
counted like any other output): a failure with probability 1 on z′ and 0 on z is an event of
unbounded ε, which the audit lower-bounds like any other region.

Findings (:data:`FINDINGS`):

- ``opendp#2929``: ``make_impute_uniform_float`` accepts an infinite bound and aborts the
  process on a NaN row;
- ``opendp#2935[zero]``, ``[raise]``, ``[clamp]``: the open design question of #2935 — what
  the noise does with a NaN that a NaN-free domain let through — under three policies,
  on the NaN row's pair of the adapter row ``opendp:sum [unchecked]``;
- ``opendp#2944``: Polars ``cut().to_physical()`` codes follow the order of appearance;
- ``opendp#2949``: a column redefined after a truncation keeps the truncation's bounds;
- ``dpmm:constant-column``: with no NaN at all, a constant column is copied into every
  synthetic row.

A finding whose library runs in its own environment (``isolated``: dpmm) is audited only
when named (``nan_regression.py --findings``), as the isolated adapter rows are; a slow
release is audited on fewer calls (``calls``, ``pilot``), stated in its row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from audit.adapters import make_implementation, registry
from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from audit.records import traits_of
from experiments import opendp_issues_more as more
from experiments.nan_verdicts import CONFIDENCE, combined, estimate, verdict

__all__ = ["Finding", "FINDINGS", "audit", "run", "row", "markdown_lines"]

N_RECORDS = 10
#: #2949's groups per identifier: each of two identifiers has one row in each
GROUPS = 50
#: δ at which #2949's zCDP claim is stated, and dpmm's
DELTA = 1e-6
_RS = "rust/src"
#: calls per worker call of an isolated release (each within the worker's call timeout)
ISOLATED_CHUNK = 100


def _nan_row_pair(others: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The NaN table's pair: record 0 at 1 against NaN, the n − 1 others at ``others``."""
    z = np.full((N_RECORDS, 1), others)
    z[0] = 1.0
    z_prime = z.copy()
    z_prime[0] = np.nan
    return z, z_prime


def _cut_pair() -> tuple[np.ndarray, np.ndarray]:
    """#2944: ten 0.5 (one bin, codes 0) against 2.0 first then nine 0.5 (2.0 takes code 0,
    every 0.5 code 1)."""
    z = np.full((N_RECORDS, 1), 0.5)
    z_prime = z.copy()
    z_prime[0] = 2.0
    return z, z_prime


def _truncation_pair() -> tuple[np.ndarray, np.ndarray]:
    """#2949: one record per identifier, (id, its rows' groups); z: identifiers 0 and 1 each
    in groups 0..GROUPS−1; z′: the rows of identifier 0 all in group 0 (one record, an
    identifier's rows, substituted)."""
    groups = np.arange(GROUPS, dtype=float)
    z = np.vstack([np.concatenate([[0.0], groups]), np.concatenate([[1.0], groups])])
    z_prime = z.copy()
    z_prime[0, 1:] = 0.0
    return z, z_prime


def _constant_pair() -> tuple[np.ndarray, np.ndarray]:
    """dpmm: records (x, y); z: x = 0 × 10; z′: x = (1, 0 × 9); y the same spread values on
    both sides (the second table column, so that a constant x leaves dpmm a column to model)."""
    y = np.linspace(-0.9, 0.9, N_RECORDS)
    z = np.column_stack([np.zeros(N_RECORDS), y])
    z_prime = z.copy()
    z_prime[0, 0] = 1.0
    return z, z_prime


#: dpmm's PrivBayes: its MST spends about 10 s a release on the table (x, y) of z′ (its
#: selection of pairs), PrivBayes 0.3 s; both share the binner that copies a static column
DPMM = {"target": "dpmm:privbayes", "epsilon": 1.0, "delta": DELTA,
        "params": {"bounds": [-1.0, 1.0], "companion": 1}}


def _dpmm():
    return make_implementation(DPMM["target"], epsilon=DPMM["epsilon"], delta=DPMM["delta"],
                               params=DPMM["params"])


@dataclasses.dataclass(frozen=True)
class Finding:
    """One reported behaviour: the release (``make``), its pair, what is expected, why.

    ``library`` is the adapter library whose version the row records; ``isolated`` the
    ``implementation`` table of an isolated release's config (None otherwise); ``calls`` and
    ``pilot`` the main run's and the pilot's calls per side (``pilot`` None: the policy's
    rule, twice the main run); ``reruns`` the audits on independent calls (the libraries are
    unseeded)."""

    key: str
    library: str
    report: str
    release: str
    pair_text: str
    make: Callable
    pair: Callable[[], tuple[np.ndarray, np.ndarray]]
    expected: str
    root_cause: str
    source: str
    finding: str = "NaN"
    calls: int = 4000
    pilot: int | None = None
    reruns: int = 3
    isolated: dict | None = None


_POLICY_TEXT = {
    "zero": ("NaN → 0 silently (0.16's own)", "violates",
             "the NaN sum read as 0 by the noise: the whole sum voided, not one record",
             f"{_RS}/measurements/noise/nature/float/mod.rs:89-90"),
    "raise": ("raise", "violates",
              "a NaN at the noise raises on z′ and never on z: the exception is an output "
              "of probability 1 against 0 (loud, but as distinguishing as the silent 0)",
              f"{_RS}/measurements/noise/nature/float/mod.rs:89-90"),
    "clamp": ("NaN → clamp bound (the clamp's lower bound 0, per entry, before the sum)",
              "borderline", "no violation: the NaN entry read as a value inside the declared "
              "bounds, which the sum's sensitivity covers; the pair (1 against a NaN read as "
              "0) attains the claim exactly, so ε̂ sits at it, above the margin of 'keeps'",
              f"{_RS}/traits/operations/mod.rs:356"),
}


def _policies() -> tuple[Finding, ...]:
    return tuple(
        Finding(f"opendp#2935[{p}]", "opendp", "opendp/opendp#2935 (open design question)",
                f"make_sum on atom_domain(bounds=(0, 1)) (NaN-free declared), size 10, Laplace "
                f"at ε = 1; policy: {_POLICY_TEXT[p][0]}",
                "(1) vs NA, others 1", lambda p=p: more.policy_sum(N_RECORDS, p),
                lambda: _nan_row_pair(1.0), _POLICY_TEXT[p][1], _POLICY_TEXT[p][2],
                _POLICY_TEXT[p][3], finding="NaN policy")
        for p in more.POLICIES)


#: the findings, in the table's order
FINDINGS = (
    Finding("opendp#2929", "opendp", "opendp/opendp#2929",
            "impute_uniform_float(bounds=(0, inf)) >> clamp (0, 1) >> sum >> Laplace at ε = 1 "
            "(core API); a process abort counted as the output 'raised'",
            "(1) vs NA", more.imputed_sum, _nan_row_pair, "violates",
            "an infinite bound accepted (only NaN and order are checked); a NaN row draws from "
            "Uniform(0, inf), which panics inside an FFI call that cannot unwind: the process "
            "aborts on z′, never on z",
            f"{_RS}/transformations/impute/mod.rs:40-49; "
            f"{_RS}/transformations/impute/mod.rs:55-59",
            calls=400, pilot=100, reruns=1),
    *_policies(),
    Finding("opendp#2944", "opendp-polars", "opendp/opendp#2944",
            "Polars cut([1.0]).to_physical().dp.sum((0, 1), scale=2), NaN-free column, "
            "max_length 10 (charged ε = 1 per substitution)",
            "(0.5 × 10) vs (2.0, 0.5 × 9)", lambda: more.cut_codes_sum(N_RECORDS), _cut_pair,
            "violates",
            "cut declares its categories in break order and to_physical accepts a categorical "
            "whose categories are known as a row-by-row map of stability 1; Polars numbers the "
            "categories in order of appearance, so one record moves every code",
            f"{_RS}/transformations/make_stable_expr/expr_cut/mod.rs:69-84; "
            f"{_RS}/transformations/make_stable_expr/expr_to_physical/mod.rs:69-79",
            finding="not NaN"),
    Finding("opendp#2949", "opendp-polars", "opendp/opendp#2949",
            f"Polars: one row per (id, g), at most {GROUPS} groups per id, then "
            "with_columns(g=0) and group_by(g).agg(dp.len(scale=10)), zCDP, identifier id; "
            f"claim: OpenDP's (ε, δ = {DELTA:g}) at d_in = 2",
            f"one record per id: ids 0, 1 each in groups 0..{GROUPS - 1} vs id 0 in group 0 "
            "only",
            lambda: more.redefined_truncation_count(GROUPS, DELTA), _truncation_pair,
            "violates",
            "with_columns drops the margins of a redefined column but passes the metric, "
            "with the truncation's bounds by g, on unchanged: the merged group is charged "
            "one row per identifier",
            f"{_RS}/transformations/make_stable_lazyframe/h_stack/mod.rs:92-98; "
            f"{_RS}/transformations/make_stable_lazyframe/h_stack/mod.rs:104-119",
            finding="not NaN"),
    Finding("dpmm:constant-column", "dpmm", "dpmm 0.1.9 (no report)",
            "dpmm:privbayes, table (x, y) (companion column y), bounds (-1, 1), (ε, δ) = "
            "(1, 1e-6); "
            "the release: the NaN fraction and the mean of the synthetic x",
            "x: (0 × 10) vs (1, 0 × 9); y the same on both sides", _dpmm, _constant_pair,
            "violates",
            "a one-valued column is static: dropped from the model and its value copied into "
            "every synthetic row, exactly, without noise (z: every synthetic x is 0; z′: x "
            "is modelled)",
            "dpmm/processing/table_binner.py:230-237; dpmm/processing/table_binner.py:433-435",
            finding="not NaN", calls=300, pilot=100, reruns=1, isolated=DPMM),
)


def by_key(keys) -> tuple[Finding, ...]:
    """The findings named by ``keys`` (None: all), ValueError naming an unknown key."""
    if keys is None:
        return FINDINGS
    known = {f.key: f for f in FINDINGS}
    unknown = sorted(set(keys) - set(known))
    if unknown:
        raise ValueError(f"unknown findings {unknown}; known: {', '.join(known)}")
    return tuple(f for f in FINDINGS if f.key in set(keys))


def audit(f: Finding, impl, *, seed: int):
    """The black-box audit of ``impl`` (``f``'s release) on ``f``'s pair, nothing masked."""
    z, z_prime = f.pair()
    both = np.concatenate([z, z_prime])
    finite = np.abs(both[np.isfinite(both)])
    doc = {"scenario": {"mechanism": "laplace", "epsilon": impl.claim.epsilon,
                        "bound": float(max(1.0, finite.max(initial=0.0))), "query": "sum"},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "pair": {"z": z.tolist(), "z_prime": z_prime.tolist()},
           "audit": {"trials": f.calls, "seed": seed, "confidence": CONFIDENCE, "jobs": 1}}
    if f.pilot is not None:
        doc["audit"]["pilot_trials"] = f.pilot
    if f.isolated is not None:
        doc["implementation"] = {**f.isolated, "chunk": ISOLATED_CHUNK}
    return run_audit(config_from_dict(doc, name=f.key), implementation=impl)


def _version(library: str) -> str:
    return registry.library_version(registry.get_adapter(library))


def _row_head(f: Finding) -> dict:
    adapter = registry.get_adapter(f.library)
    return {"key": f.key, "library": adapter.distribution, "version": _version(f.library),
            "seedable": adapter.seedable, "report": f.report, "release": f.release,
            "pair": f.pair_text, "finding": f.finding, "expected": f.expected,
            "root_cause": f.root_cause, "source": f.source}


def row(f: Finding, runs: list, raised: dict | None = None) -> dict:
    """The row of ``f`` audited ``len(runs)`` times (``raised``: the failures counted as
    the output "raised", by kind)."""
    each = [{"eps_lower": r.eps_lower, "eps_point": r.eps_point, "eps_estimate": e,
             "verdict": verdict(r.eps_lower, e, r.eps_claim)}
            for r, e in ((r, estimate(r.witness)) for r in runs)]
    lows = [e["eps_lower"] for e in each]
    res = runs[0]
    return {**_row_head(f), "claim": res.eps_claim, "delta": res.delta,
            "verdict": combined([e["verdict"] for e in each]), "eps_lower": res.eps_lower,
            "eps_estimate": each[0]["eps_estimate"], "eps_point": res.eps_point,
            "eps_lower_range": [min(lows), max(lows)], "runs": each, "witness": res.witness,
            "witness_text": res.describe(), "raised": dict(raised or {}),
            "calls": res.trials, "pilot_calls": res.pilot_trials}


def not_reproduced(f: Finding, message: str) -> dict:
    """The row of a finding whose release the installed library refuses to build."""
    head = _row_head(f)
    return {**head, "claim": None, "delta": None,
            "verdict": f"not reproduced on {head['version']}", "eps_lower": None,
            "eps_estimate": None, "eps_point": None, "eps_lower_range": None, "runs": [],
            "witness": None, "witness_text": f"the release was refused at construction: "
                                             f"{' '.join(message.split())}",
            "raised": {}, "calls": 0, "pilot_calls": 0}


def audit_finding(f: Finding, *, seed: int) -> dict:
    """``f`` audited ``f.reruns`` times (seeds ``seed``, ``seed`` + 1000, ...), as a row."""
    try:
        impl = f.make()
    except Exception as exc:  # the library refused the release: nothing to audit
        if type(exc).__name__ != "OpenDPException":
            raise
        return not_reproduced(f, str(exc))
    try:
        runs = [audit(f, impl, seed=seed + 1000 * j) for j in range(f.reruns)]
    finally:
        if hasattr(impl, "close"):
            impl.close()
    release = traits_of(impl).functions[:1]  # (the adapter's release, where it wraps one)
    return row(f, runs, getattr(release[0], "failures", None) if release else None)


def run(*, seed: int = 0, keys=None, previous: list | None = None,
        isolated: bool = False) -> list[dict]:
    """The findings' rows, in :data:`FINDINGS`' order: those named by ``keys`` (None: every
    finding, the isolated ones only with ``isolated``) audited anew, the others taken from
    ``previous`` (rows of an earlier table) where they are there."""
    kept = {r["key"]: r for r in previous or ()}
    named = {f.key for f in by_key(keys)}
    rows = []
    for i, f in enumerate(FINDINGS):
        anew = f.key in named and (keys is not None or isolated or f.isolated is None)
        if anew:
            rows.append(audit_finding(f, seed=seed + 500 + i))
        elif f.key in kept:
            rows.append(kept[f.key])
    return rows


def _cell(text) -> str:
    return str(text).replace("|", "/")


def _low(r: dict) -> str:
    if r["eps_lower"] is None:
        return "—"
    rng = r.get("eps_lower_range")
    if rng and len(r.get("runs", ())) > 1:
        return f"{rng[0]:.3f}–{rng[1]:.3f}"
    return f"{r['eps_lower']:.3f}"


def _claim(r: dict) -> str:
    if r["claim"] is None:
        return "—"
    return f"{r['claim']:.4g}" + (f" (δ = {r['delta']:g})" if r.get("delta") else "")


def markdown_lines(rows: list[dict]) -> list[str]:
    """The findings' table and its witnesses (nothing without rows)."""
    if not rows:
        return []
    lines = ["", "**Reported findings**: each release as its report writes it, on the pair "
             "that shows it (the table's "
             "confidence and verdict rule; `experiments/nan_findings.py`). A call that fails "
             "(raises, or aborts its process) releases the output symbol 'raised', counted "
             "like any other output.", "",
             "| finding | report | library version | release | pair | claim ε | verdict "
             "(expected) | ε_lower | ε̂ | calls per side | root cause (source) |",
             "|---|---|---|---|---|---:|---|---:|---:|---:|---|"]
    for r in rows:
        seeded = "" if r["seedable"] else " (unseeded)"
        got = r["verdict"] + ("" if r["verdict"] == r["expected"]
                              else f" (expected {r['expected']})")
        where = "; ".join(f"`{s}`" for s in r["source"].split("; "))
        est = "—" if r["eps_estimate"] is None else f"{r['eps_estimate']:.3f}"
        runs = len(r.get("runs", ()))
        calls = f"{r['calls']:,}" + (f" × {runs} runs" if runs > 1 else "")
        lines.append(f"| {r['key']} | {r['report']} | {r['library']} {r['version']}{seeded} "
                     f"| {_cell(r['release'])} | {_cell(r['pair'])} | {_claim(r)} | "
                     f"**{got}** | {_low(r)} | {est} | {calls} | "
                     f"{r['finding']}: {_cell(r['root_cause'])} ({where}) |")
    lines += ["", "Witnesses (each finding's first audit):", ""]
    for r in rows:
        raised = ", ".join(f"{k} {v}" for k, v in sorted(r.get("raised", {}).items()))
        lines.append(f"- {r['key']}: {_cell(r['witness_text'])}"
                     + (f"; calls that released 'raised' (all runs, pilots included): "
                        f"{raised}" if raised else ""))
    return lines
