"""The NaN regression table: every adapter example × its NaN semantics × verdict.

A DP library's claim is made for its input domain; data with missing values reach it as NaN.
For every example of every registered adapter (``audit.adapters.registry.examples``: the
targets the contract tests run, with their parameters) this audits whether the release keeps
its claim when one record is NaN on one side of the pair: a black-box implementation audit
of the pair fixed by rule (:func:`pair_value`: the record at the end of the example's bounds
farthest from 0, at least 1 in size, against the all-NA record, the other records 0 — at
that value too where the NaN is outside the declared domain, :func:`others_value`; a
search among −B, 0 and +B chose by noise between equally bad pairs of unseedable
libraries), with no further masking (missingness rate 0: the NaN is in the data), at
confidence :data:`CONFIDENCE`. An unseedable library (OpenDP, PipelineDP, python-dp) is
audited :data:`RERUNS` times on independent calls and its row reports the range of ε_lower;
its verdict is the runs' common verdict, or ``borderline`` where they differ.

Each row also says what kind of finding it is (``finding``: ``NaN``, or ``relation`` where the
claim fails for the neighbouring relation whatever the NaN does: diffprivlib's histogram and
histogramdd are calibrated for add/remove, and a substituted entry moves two bins), the root
cause of a violation (``root_cause``: the NaN passed through the noise, the NaN returned
before any noise by a quantile-like function, the NaN read as 0 outside the declared bounds),
where in the library's own code the NaN's fate is decided (``source``: the target's
``Target.source``, ``path/in/package.py:LINE``; the markdown prints it after the cause and
after a violation's root cause), and, for a row that keeps its claim on this one-NaN pair,
whether the mask-stratified MCAR audit of the same target (``results/library_audit.json``)
refutes it at some missing rate (``mcar``).

A row's adapter metadata (:data:`METADATA`: the example's ``doc``, ``nan``, ``cause``,
``source``, ``finding``, ``root_cause``) is read from the adapters, not measured:
``--refresh`` rewrites it from the current adapters, with the MCAR column, and keeps every
audited number, the pair and the verdict as they are (no audit: the isolated libraries' rows
need minutes of Spark to rerun). A row whose target or example is no longer registered
stops the refresh (rerun it with ``--only``). ``--only`` refreshes the rows it keeps the same
way. The root cause of a kept verdict is derived anew from the current NaN semantics.

Verdicts (flip probability between reruns):

- ``violates``: ε_lower > the claim at 99 % confidence (a rerun shows a violation again unless
  this run's bound was one of the ≤ 1 % that exceed the truth);
- ``keeps``: ε_lower ≤ the claim and the region's estimate ε̂ ≤ :data:`MARGIN` × the claim
  (:func:`estimate`: the plug-in with Jeffreys' half counts, so that a region of a few calls,
  where the attack found nothing, reads near 0): no evidence against the claim, with a stated
  margin to the threshold;
- ``borderline``: neither — the estimate lies within the margin of the claim, where a rerun
  may decide either way (this, and only this, verdict can flip);
- ``contract``: a violation by a NaN that the library's declared input domain excludes and
  invocation does not check (NaN semantics ``unchecked``: OpenDP's sum on a NaN-free bounded
  domain, #2935's core witness): the claim fails, but outside the guarantee the library
  states — the caller broke its side of the contract, which a user must know as well.
- ``fails``: the library crashed inside its own code on the call, NaN or not (a
  :class:`~audit.adapters.LibraryDefect`, which the target declares, ``Target.defect``:
  PipelineDP 0.3.1's ``VECTOR_SUM`` with public partitions): no release, so no audit; the
  row's finding is ``defect`` and its root cause the library's message with the source line.

Each row records the library version, whether the library is seedable (OpenDP, PipelineDP and
python-dp draw from their own CSPRNG), the pair chosen and its counts. ``results/
nan_regression.json`` and ``.md`` are committed; a default test checks that the versions they
record are the installed ones and that they cover every registered example (upgrading a
library or adding a target makes it fail until this script is rerun), and a slow test reruns
it and compares the verdicts.

The libraries audited in their own environments (SmartNoise SQL, Tumult Analytics;
``Adapter.isolated``, :mod:`audit.adapters.isolation`) are audited only when ``--only`` names
their targets (their environment is built first, and a
Spark-backed release is a job); their rows follow the others, in the registry's order, and
a run that does not name them keeps them from the table at ``--out``. The version a row
records for them is the environment's pin. A library whose release costs tens of milliseconds
(dpmm: a synthetic table per release) is audited with fewer calls per side
(:data:`SLOW_CALLS`), which its rows record and the markdown states.

Run (not part of ``python -m audit suite``; a quarter of an hour on one core, see
docs/measurements.md)::

    PYTHONPATH=. python experiments/nan_regression.py [--calls 4000] [--seed 0]
        [--only TARGET ...]   # those targets anew, the other rows kept from the table;
                              # TARGET[EXAMPLE] (e.g. 'tumult:sum[gaussian]'): one example
        [--refresh]           # no audit: adapter metadata (source, cause, ...) and the MCAR
                              # column refreshed (alias --cross-reference)
        [--findings [KEY ...]]  # the reported findings (experiments/nan_findings.py) named,
                                # or all, anew; every other row kept

The table's second section, the reported findings (``experiments/nan_findings.py``: OpenDP
#2929, #2935's three NaN policies, #2944, #2949, dpmm's constant column), is audited by a full
run (but the isolated dpmm finding, kept from the table) and by ``--findings``; ``--only`` and
``--refresh`` keep it as it is.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from audit.adapters import LibraryDefect, make_implementation, registry
from audit.pipeline.config import config_from_dict
from audit.pipeline.results import save_json, write_text_atomic
from audit.pipeline.runner import run_audit
from experiments import nan_findings
from experiments.nan_verdicts import (  # noqa: F401  (re-exported: the table's rule)
    CONFIDENCE,
    MARGIN,
    combined,
    estimate,
    verdict,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "nan_regression.json"
N_RECORDS = 10
#: calls per side of each audit
CALLS = 4000
#: fewer calls per side for a library whose release costs tens of milliseconds (dpmm fits a
#: generator and draws a synthetic table per release, about 50 ms on one core: 4,000 calls
#: per side, with the black-box pilot of twice as many and 3 runs of an unseeded library,
#: would take an hour a row); its rows audit ``min(--calls, this)``, record it (``calls``)
#: and say so in the markdown
SLOW_CALLS = {"dpmm": 1000}
#: audits of an unseedable library's row (independent calls): its ε_lower range and verdicts
RERUNS = 3
#: targets whose finding is about the neighbouring relation, not the NaN (module docstring)
RELATION_FINDINGS = {"diffprivlib:histogram", "diffprivlib:histogramdd"}
LIBRARY_AUDIT = ROOT / "results" / "library_audit.json"
#: a row's keys read from the adapters, not measured (:func:`refresh` rewrites them)
METADATA = ("doc", "nan", "cause", "source", "finding", "root_cause")
#: a row's keys in the order :func:`row` writes them
ROW_KEYS = ("target", "example", "doc", "nan", "cause", "source", "claim", "delta", "verdict",
            "finding", "root_cause", "mcar", "mcar_amplified", "eps_lower", "eps_estimate",
            "eps_point", "eps_lower_range", "runs", "pair", "witness", "calls", "library",
            "version", "seedable")


def _bound(params) -> float:
    b = params.get("bounds")
    return max(1.0, *(abs(float(v)) for v in b)) if b is not None else 1.0


def pair_value(params) -> float:
    """The differing record's value (the other side: NA): the end of the example's bounds
    farthest from 0 (ties: the upper end), at least 1 in size; 1 without bounds."""
    b = params.get("bounds")
    if b is None:
        return 1.0
    lo, hi = (float(v) for v in b)
    end = hi if abs(hi) >= abs(lo) else lo
    return end if abs(end) >= 1.0 else math.copysign(1.0, end or 1.0)


def others_value(nan: str, params) -> float:
    """The other records' value in the pair: 0, except where a NaN is outside the declared
    domain (``unchecked``), which may void the whole statistic (OpenDP reads the NaN sum as
    0, #2935): there the pair's own value, so that voiding them shows."""
    return pair_value(params) if nan == "unchecked" else 0.0


def _nan(target: str, example) -> str:
    library, function = target.split(":")
    return registry.get_adapter(library).target(function).nan_semantics(example.params).value


def implementation(target: str, example):
    """The example's implementation."""
    return make_implementation(target, epsilon=example.epsilon, delta=example.delta,
                               params=example.kwargs())


def audit_example(target: str, example, *, calls: int = CALLS, seed: int = 0, impl=None):
    """The audit of one example (module docstring); ``impl``: its implementation, already
    made (an isolated one is made once for its reruns)."""
    impl = implementation(target, example) if impl is None else impl
    v = pair_value(example.params)
    rest = [[others_value(_nan(target, example), example.params)]] * (N_RECORDS - 1)
    doc = {"scenario": {"mechanism": "laplace", "epsilon": example.epsilon, "n": N_RECORDS,
                        "d": 1, "bound": _bound(example.params), "query": "sum"},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "pair": {"z": [[v]] + rest, "z_prime": [[math.nan]] + rest},
           "audit": {"trials": calls, "seed": seed, "confidence": CONFIDENCE}}
    if registry.get_adapter(target.split(":")[0]).isolated:  # one worker call per side
        doc["implementation"] = {"target": target, "epsilon": example.epsilon,
                                 "delta": example.delta, "params": example.kwargs(),
                                 "chunk": calls}
    return run_audit(config_from_dict(doc, name=f"{target} [{example.name}]"),
                     implementation=impl)


def _version(library: str) -> str:
    """The library's version: installed beside the auditor, or pinned in its own environment
    (an isolated library, :mod:`audit.adapters.isolation`)."""
    return registry.library_version(registry.get_adapter(library))


def cause(summary: str, example) -> str:
    """What a NaN does in this example, as the adapter reads the library's source: the
    target's one line, then the example's own where it is not the default."""
    if example.name == "default" or not example.doc:
        return summary
    return f"{summary} ({example.doc})"


def root_cause(nan: str, why: str, decided: str) -> str | None:
    """The root cause of a violation, from the NaN semantics the adapter reads (None where
    the row does not violate)."""
    if decided == "contract":
        return "NaN passed into a domain declared NaN-free (caller contract)"
    if decided != "violates":
        return None
    if nan == "propagates":
        return ("NaN returned before any noise" if "before any noise" in why
                else "NaN passed through the noise")
    if nan == "read-as-zero":
        return "NaN read as 0 outside the declared bounds"
    if nan == "sets-domain":  # dpmm's preprocessing (audit.adapters.dpmm)
        return "NaN sets the output's domain, before any noise"
    return "other"


def metadata(target: str, example, decided: str) -> dict:
    """The row's adapter metadata (:data:`METADATA`) for ``example`` of ``target`` with the
    verdict ``decided``, from the current adapters."""
    library, function = target.split(":")
    declared = registry.get_adapter(library).target(function)
    nan = declared.nan_semantics(example.params).value
    why = cause(declared.summary, example)
    finding = "relation" if target in RELATION_FINDINGS else "NaN"
    return {"doc": example.doc, "nan": nan, "cause": why, "source": declared.source,
            "finding": finding,
            "root_cause": root_cause(nan, why, decided) if finding == "NaN" else None}


def _refreshed(r: dict, example) -> dict:
    new = {**r, **metadata(r["target"], example, r["verdict"])}
    if r["verdict"] == "fails":  # no release: its finding and cause are the library's crash
        new.update(finding=r["finding"], root_cause=r["root_cause"])
    return _in_row_order(new)


def _in_row_order(r: dict) -> dict:
    """``r`` with its keys in :data:`ROW_KEYS`' order (the others after them)."""
    return {**{k: r[k] for k in ROW_KEYS if k in r}, **r}


def refresh(doc: dict) -> dict:
    """The table with every row's adapter metadata (:data:`METADATA`) read anew from the
    current adapters and the MCAR column anew (:func:`cross_reference`); every other key of
    a row (its numbers, pair, verdict, version) kept as audited. No audit is run.

    Raises
    ------
    ValueError
        naming the rows whose target or example is no longer registered (rerun them).
    """
    examples = {(t, e.name): e for t, e in registry.examples()}
    gone = [f"{r['target']} [{r['example']}]" for r in doc["rows"]
            if (r["target"], r["example"]) not in examples]
    if gone:
        raise ValueError(f"rows no longer registered, rerun them (--only) or remove them: "
                         f"{', '.join(gone)}")
    rows = [_refreshed(r, examples[(r["target"], r["example"])]) for r in doc["rows"]]
    return cross_reference({**doc, "rows": rows})


def cross_reference(doc: dict) -> dict:
    """The table with every ``keeps`` row's MCAR refutations: the missing rates at which the
    stratified MCAR audit of the same target and example (``results/library_audit.json``,
    read once) refutes the claim (``mcar``), and those where it refutes only the claim
    amplified by the missingness (``mcar_amplified``: diffprivlib ``nanvar``); empty where it
    does not, audits another example, or was not run (also :func:`refresh`, with no
    audit)."""
    from experiments.library_targets import TARGETS

    audited = {s["target"]: s["example"] for s in TARGETS}
    found = json.loads(LIBRARY_AUDIT.read_text())["rows"] if LIBRARY_AUDIT.is_file() else []
    refuted: dict[str, list] = {}
    amplified: dict[str, list] = {}
    for r in found:
        if r.get("claim_refuted"):
            refuted.setdefault(r["target"], []).append(r["rate"])
        elif r.get("amplified_refuted"):
            amplified.setdefault(r["target"], []).append(r["rate"])

    def mcar(r: dict, rates: dict) -> list:
        keeps = r["verdict"] == "keeps" and audited.get(r["target"]) == r["example"]
        return rates.get(r["target"], []) if keeps else []

    return {**doc, "rows": [_in_row_order({**r, "mcar": mcar(r, refuted),
                                           "mcar_amplified": mcar(r, amplified)})
                            for r in doc["rows"]]}


def defect_of(exc: BaseException) -> LibraryDefect | None:
    """The :class:`~audit.adapters.LibraryDefect` behind an audit's failure (the audit wraps
    the implementation's exception in an ``ImplementationError``), or None."""
    while exc is not None:
        if isinstance(exc, LibraryDefect):
            return exc
        exc = exc.__cause__
    return None


def failed_row(target: str, example, defect: LibraryDefect) -> dict:
    """The row of an example whose library crashed (verdict ``fails``, finding ``defect``):
    no release, no bound."""
    library = target.split(":")[0]
    adapter = registry.get_adapter(library)
    nan = _nan(target, example)
    return _in_row_order({
        "target": target, "example": example.name, **metadata(target, example, "fails"),
        "claim": example.epsilon, "delta": example.delta, "verdict": "fails",
        "finding": "defect", "root_cause": " ".join(str(defect).split()), "mcar": [],
        "mcar_amplified": [],
        "eps_lower": None, "eps_estimate": None, "eps_point": None, "eps_lower_range": None,
        "runs": [], "pair": _pair_text(nan, example.params), "witness": None, "calls": 0,
        "library": adapter.distribution, "version": _version(library),
        "seedable": adapter.seeded(example.params)})


def _pair_text(nan: str, params) -> str:
    others = others_value(nan, params)
    return f"({pair_value(params):g}) vs NA" + (f", others {others:g}" if others else "")


def row(target: str, example, runs: list) -> dict:
    library = target.split(":")[0]
    adapter = registry.get_adapter(library)
    res = runs[0]
    nan = _nan(target, example)
    each = [{"eps_lower": r.eps_lower, "eps_point": r.eps_point, "eps_estimate": e,
             "verdict": verdict(r.eps_lower, e, r.eps_claim)}
            for r, e in ((r, estimate(r.witness)) for r in runs)]
    decided = combined([e["verdict"] for e in each], nan)
    meta = metadata(target, example, decided)
    lows = [e["eps_lower"] for e in each]
    return {"target": target, "example": example.name, "doc": meta["doc"], "nan": nan,
            "cause": meta["cause"], "source": meta["source"], "claim": example.epsilon,
            "delta": example.delta, "verdict": decided, "finding": meta["finding"],
            "root_cause": meta["root_cause"],
            "mcar": [], "mcar_amplified": [],  # (:func:`cross_reference`, once per table)
            "eps_lower": res.eps_lower, "eps_point": res.eps_point,
            "eps_estimate": each[0]["eps_estimate"],
            "eps_lower_range": [min(lows), max(lows)], "runs": each,
            "pair": _pair_text(nan, example.params), "witness": res.witness,
            "calls": res.trials, "library": adapter.distribution,
            "version": _version(library), "seedable": adapter.seeded(example.params)}


def named(only, target: str, example: str) -> bool:
    """Whether ``only`` (``--only``'s names: ``TARGET`` for all its examples, or
    ``TARGET[EXAMPLE]`` for one) names this row."""
    return target in only or f"{target}[{example}]" in only


def run(calls: int = CALLS, seed: int = 0, only=None, previous: dict | None = None) -> dict:
    """The table; with ``only`` (target names, or ``TARGET[EXAMPLE]`` for one example), those
    rows audited anew and every other row taken from ``previous`` (a table of the same calls
    and seed), in the registry's order, its adapter metadata refreshed (:func:`refresh`)."""
    kept = {(r["target"], r["example"]): r for r in (previous or {}).get("rows", ())}
    rows = []
    # the isolated libraries' examples follow the others (whose seeds keep their index)
    here = registry.examples(isolated=False)
    names = {(t, e.name) for t, e in here}
    isolated = [(t, e) for t, e in registry.examples() if (t, e.name) not in names]
    for i, (t, e) in enumerate([*here, *isolated]):
        if only is not None and not named(only, t, e.name) and (t, e.name) in kept:
            rows.append(_refreshed(kept[(t, e.name)], e))
            continue
        if (t, e.name) not in names and (only is None or not named(only, t, e.name)):
            if (t, e.name) in kept:  # audited only when named (module docstring)
                rows.append(_refreshed(kept[(t, e.name)], e))
            continue
        adapter = registry.get_adapter(t.split(":")[0])
        impl = implementation(t, e) if adapter.isolated else None
        reruns = 1 if adapter.seeded(e.params) else RERUNS
        n = min(calls, SLOW_CALLS.get(adapter.library, calls))
        try:
            runs = [audit_example(t, e, calls=n, seed=seed + i + 1000 * j, impl=impl)
                    for j in range(reruns)]
        except ValueError as exc:  # an ImplementationError: the library crashed?
            defect = defect_of(exc)
            if defect is None:
                raise
            rows.append(failed_row(t, e, defect))
            continue
        finally:
            if impl is not None:
                impl.close()
        rows.append(row(t, e, runs))
    kept_findings = (previous or {}).get("findings", [])
    found = (nan_findings.run(seed=seed, previous=kept_findings) if only is None
             else kept_findings)
    return cross_reference({"experiment": "nan_regression", "calls": calls, "seed": seed,
                            "confidence": CONFIDENCE, "margin": MARGIN, "reruns": RERUNS,
                            "rows": rows, "findings": found})


def _point(value) -> str:
    p = None if value is None else float(value)  # JSON: "inf"
    return "—" if p is None else "∞" if p == float("inf") else f"{p:.3f}"


def _where(r: dict) -> str:
    """`` (`path:LINE`; ...)``: the row's source, each place in backticks ("" without one)."""
    if not r.get("source"):
        return ""
    return " (" + "; ".join(f"`{place}`" for place in r["source"].split("; ")) + ")"


def _notes(r: dict) -> str:
    """The row's finding, root cause (with its source) and MCAR cross-reference, in words."""
    out = []
    if r.get("finding") == "relation":
        out.append("relation, not NaN")
    if r.get("finding") == "defect":
        out.append("library defect, not NaN")
    if r.get("root_cause"):
        out.append(r["root_cause"] + _where(r))
    if r.get("mcar"):
        out.append("refuted under MCAR at π = " + ", ".join(f"{p:g}" for p in r["mcar"]) +
                   " (library_audit)")
    if r.get("mcar_amplified"):
        out.append("its claim amplified by MCAR refuted at π = "
                   + ", ".join(f"{p:g}" for p in r["mcar_amplified"]) + " (library_audit)")
    return "; ".join(out) or "—"


def _pair_cell(r: dict, calls: int | None) -> str:
    """The row's pair, and its calls per side where fewer than the table's ``calls`` (a slow
    library, :data:`SLOW_CALLS`)."""
    fewer = calls and r.get("calls") and r["calls"] < calls
    return r["pair"] + (f" ({r['calls']:,} calls per side)" if fewer else "")


def _estimate(r: dict) -> float | None:
    """A row's ε̂ (its first run's; a row written before ε̂ was recorded: from its witness)."""
    return r["eps_estimate"] if "eps_estimate" in r else estimate(r.get("witness"))


def markdown(doc: dict) -> str:
    lines = ["# NaN regression table: each adapter example with one record NaN", "",
             f"Produced by `experiments/nan_regression.py` (seed {doc['seed']}, {doc['calls']:,} "
             f"calls per side on the pair fixed by rule, confidence {doc['confidence']:g}; "
             f"`violates`: ε_lower > claim; `keeps`: ε̂ ≤ {doc['margin']:g} × claim, ε̂ the "
             "region's ε with half a count added to each side's calls in it (Jeffreys), "
             "ε_point the plain plug-in; "
             "`borderline`: neither, or reruns that disagree, the only verdict a rerun may "
             "flip; `contract`: violated by a NaN that the library's declared domain excludes; "
             + ("`fails`: the library crashed on the call, NaN or not (no release); "
                if any(r["verdict"] == "fails" for r in doc["rows"]) else "") +
             f"an unseeded library's row: {doc.get('reruns', 1)} runs, the range of "
             "ε_lower).", "",
             "| target | example | NaN semantics | what a NaN does (the adapter's reading of the "
             "library's source) | library version | claim ε | verdict | ε_lower | ε̂ | ε_point | "
             "pair | finding and root cause |",
             "|---|---|---|---|---|---:|---|---:|---:|---:|---|---|"]
    for r in doc["rows"]:
        seeded = "" if r["seedable"] else " (unseeded)"
        low = "—" if r["eps_lower"] is None else f"{r['eps_lower']:.3f}"
        rng = r.get("eps_lower_range")
        if rng and len(r.get("runs", ())) > 1:
            low = f"{rng[0]:.3f}–{rng[1]:.3f}"
        lines.append(f"| `{r['target']}` | {r['example']} | {r['nan']} | "
                     f"{r.get('cause', '—').replace('|', '/')}{_where(r)} | {r['library']} "
                     f"{r['version']}{seeded} | {r['claim']:g} | **{r['verdict']}** | "
                     f"{low} | {_point(_estimate(r))} | {_point(r['eps_point'])} | "
                     f"{_pair_cell(r, doc.get('calls'))} | {_notes(r)} |")
    causes = sorted({r["root_cause"] for r in doc["rows"]
                     if r.get("root_cause") and r.get("finding") != "defect"})
    if causes:
        lines += ["", "Root causes of the violations: " + "; ".join(
            f"{c} ({sum(r.get('root_cause') == c for r in doc['rows'])} rows)"
            for c in causes) + "."]
    lines += nan_findings.markdown_lines(doc.get("findings", []))
    return "\n".join(lines) + "\n"


def read_table(path: Path) -> dict:
    """The table at ``path``; ValueError naming the path unless it is JSON holding a list of
    rows, each with its target, example and verdict."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable JSON table: {exc}") from None
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and {"target", "example", "verdict"} <= set(r) for r in rows):
        raise ValueError(f"{path} is not a NaN regression table (an object whose 'rows' are "
                         f"objects with 'target', 'example' and 'verdict')")
    return doc


def audit_findings(out: Path, keys: list[str], seed: int) -> int:
    """``--findings``: the findings ``keys`` (all where empty) audited anew into the table at
    ``out``, its other rows kept; exit status 2 on an error."""
    try:
        doc = read_table(out)
        nan_findings.by_key(keys or None)
    except ValueError as exc:
        print(f"error: --findings: {exc}", file=sys.stderr)
        return 2
    for f in nan_findings.by_key(keys or None):  # saved after each: a failure loses one
        doc["findings"] = nan_findings.run(seed=seed, keys=[f.key], isolated=True,
                                           previous=doc.get("findings"))
        save_json(doc, out)
        write_text_atomic(markdown(doc), out.with_suffix(".md"))
    print("\n".join(nan_findings.markdown_lines(doc["findings"])))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=CALLS, help="calls per side per audit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS), help="the JSON to write (and .md)")
    parser.add_argument("--refresh", "--cross-reference", action="store_true",
                        dest="refresh",
                        help="run no audit: refresh the table at --out's adapter metadata "
                             "(source, cause, nan, finding, root cause) from the current "
                             "adapters and its MCAR column from results/library_audit.json, "
                             "keeping every audited number and verdict")
    parser.add_argument("--only", nargs="+", metavar="TARGET",
                        help="audit only these targets (TARGET[EXAMPLE]: that example only) "
                             "anew; every other row is taken from the table at --out (same "
                             "--calls and --seed)")
    parser.add_argument("--findings", nargs="*", metavar="KEY",
                        help="audit only the reported findings (experiments/nan_findings.py) "
                             "named, or all of them, the isolated ones too; every adapter row "
                             "is taken from the table at --out")
    args = parser.parse_args(argv)
    if args.findings is not None:
        return audit_findings(Path(args.out), args.findings, args.seed)
    if args.calls < 100 or args.seed < 0:  # before any call: one line, exit 2
        print(f"error: --calls must be an integer >= 100 and --seed >= 0, got --calls="
              f"{args.calls} --seed={args.seed}", file=sys.stderr)
        return 2
    previous = None
    if args.refresh:
        out = Path(args.out)
        if not out.is_file():
            print(f"error: --refresh needs a table at --out, got --out {out}", file=sys.stderr)
            return 2
        try:
            doc = refresh(read_table(out))
        except ValueError as exc:
            print(f"error: --refresh: {exc}", file=sys.stderr)
            return 2
        save_json(doc, out)
        write_text_atomic(markdown(doc), out.with_suffix(".md"))
        return 0
    if args.only:
        known = {n for t, e in registry.examples() for n in (t, f"{t}[{e.name}]")}
        unknown = sorted(set(args.only) - known)
        out = Path(args.out)
        if unknown or not out.is_file():
            print(f"error: --only needs registered targets and an existing table at --out, "
                  f"got unknown {unknown} and --out {out}", file=sys.stderr)
            return 2
        try:
            previous = read_table(out)
        except ValueError as exc:
            print(f"error: --only: {exc}", file=sys.stderr)
            return 2
        if (previous.get("calls"), previous.get("seed")) != (args.calls, args.seed):
            print(f"error: --only keeps the table's other rows: --calls and --seed must be "
                  f"its {previous.get('calls')} and {previous.get('seed')}", file=sys.stderr)
            return 2
    elif Path(args.out).is_file():  # a full run keeps the isolated rows it does not audit
        try:
            table = read_table(Path(args.out))
        except ValueError as exc:
            print(f"error: --out: {exc}", file=sys.stderr)
            return 2
        if (table.get("calls"), table.get("seed")) == (args.calls, args.seed):
            previous = table
    doc = run(args.calls, args.seed, only=args.only, previous=previous)
    out = Path(args.out)
    save_json(doc, out)
    write_text_atomic(markdown(doc), out.with_suffix(".md"))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
