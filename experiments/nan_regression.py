"""The NaN regression table: every adapter example × its NaN semantics × verdict.

A DP library's claim is made for its input domain; data with missing values reach it as NaN.
For every example of every registered adapter (``audit.adapters.registry.examples``: the
targets the contract tests run, with their parameters) this audits whether the release keeps
its claim when one record is NaN on one side of the pair: a black-box implementation audit
whose pair is found by the search (``[search] families = ["nan"]``: a value ↔ NaN, the
record at −B, 0 or +B against the all-NA record, the other records 0; B the largest bound of
the example, at least 1), with no further masking (missingness rate 0: the NaN is in the
data), at confidence :data:`CONFIDENCE`.

Verdicts (flip probability between reruns):

- ``violates``: ε_lower > the claim at 99 % confidence (a rerun shows a violation again unless
  this run's bound was one of the ≤ 1 % that exceed the truth);
- ``keeps``: ε_lower ≤ the claim and the plug-in estimate ε_point ≤ :data:`MARGIN` × the claim:
  no evidence against the claim, with a stated margin to the threshold;
- ``borderline``: neither — the plug-in estimate lies within the margin of the claim, where a
  rerun may decide either way (this, and only this, verdict can flip).

Each row records the library version, whether the library is seedable (OpenDP, PipelineDP and
python-dp draw from their own CSPRNG), the pair chosen and its counts. ``results/
nan_regression.json`` and ``.md`` are committed; a default test checks that the versions they
record are the installed ones and that they cover every registered example (upgrading a
library or adding a target makes it fail until this script is rerun), and a slow test reruns
it and compares the verdicts.

Run (not part of ``python -m audit suite``; a quarter of an hour on one core, see
docs/measurements.md)::

    PYTHONPATH=. python experiments/nan_regression.py [--calls 4000] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

from audit.adapters import make_implementation, registry
from audit.pipeline.config import config_from_dict
from audit.pipeline.results import save_json, write_text_atomic
from audit.pipeline.runner import run_audit

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "nan_regression.json"
CONFIDENCE = 0.99
MARGIN = 0.9
N_RECORDS = 10
#: calls per side: each candidate pair of the search, and the audit of the chosen pair
SEARCH_CALLS = 500
CALLS = 4000


def _bound(params) -> float:
    b = params.get("bounds")
    return max(1.0, *(abs(float(v)) for v in b)) if b is not None else 1.0


def verdict(eps_lower: float, eps_point: float | None, claim: float) -> str:
    """``violates`` / ``keeps`` / ``borderline`` (module docstring)."""
    if eps_lower > claim:
        return "violates"
    if eps_point is not None and eps_point <= MARGIN * claim:
        return "keeps"
    return "borderline"


def audit_example(target: str, example, *, calls: int = CALLS, seed: int = 0):
    """The audit of one example (module docstring)."""
    impl = make_implementation(target, epsilon=example.epsilon, delta=example.delta,
                               params=example.kwargs())
    doc = {"scenario": {"mechanism": "laplace", "epsilon": example.epsilon, "n": N_RECORDS,
                        "d": 1, "bound": _bound(example.params), "query": "sum"},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "search": {"families": ["nan"], "cap": 3, "calls": SEARCH_CALLS},
           "audit": {"trials": calls, "seed": seed, "confidence": CONFIDENCE}}
    return run_audit(config_from_dict(doc, name=f"{target} [{example.name}]"),
                     implementation=impl)


def _version(library: str) -> str:
    try:
        return metadata.version(registry.get_adapter(library).distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def cause(summary: str, example) -> str:
    """What a NaN does in this example, as the adapter reads the library's source: the
    target's one line, then the example's own where it is not the default."""
    if example.name == "default" or not example.doc:
        return summary
    return f"{summary} ({example.doc})"


def row(target: str, example, res) -> dict:
    library, function = target.split(":")
    adapter = registry.get_adapter(library)
    chosen = res.search.best
    return {"target": target, "example": example.name, "doc": example.doc,
            "nan": adapter.target(function).nan_semantics(example.params).value,
            "cause": cause(adapter.target(function).summary, example),
            "claim": example.epsilon, "delta": example.delta,
            "verdict": verdict(res.eps_lower, res.eps_point, res.eps_claim),
            "eps_lower": res.eps_lower, "eps_point": res.eps_point, "pair": chosen["label"],
            "witness": res.witness, "calls": res.trials, "library": adapter.distribution,
            "version": _version(library), "seedable": adapter.seedable}


def run(calls: int = CALLS, seed: int = 0) -> dict:
    # the libraries in their own environments (SmartNoise SQL) join the table with issue 28's
    # item 4; until then it covers those installed beside the auditor
    rows = [row(t, e, audit_example(t, e, calls=calls, seed=seed + i))
            for i, (t, e) in enumerate(registry.examples(isolated=False))]
    return {"experiment": "nan_regression", "calls": calls, "seed": seed,
            "confidence": CONFIDENCE, "margin": MARGIN, "rows": rows}


def markdown(doc: dict) -> str:
    lines = ["# NaN regression table: each adapter example with one record NaN", "",
             f"Produced by `experiments/nan_regression.py` (seed {doc['seed']}, {doc['calls']:,} "
             f"calls per side on the pair a value-vs-NA search chose, confidence "
             f"{doc['confidence']:g}; `violates`: ε_lower > claim; `keeps`: ε_point ≤ "
             f"{doc['margin']:g} × claim; `borderline`: neither, the only verdict a rerun may "
             "flip).", "",
             "| target | example | NaN semantics | what a NaN does (the adapter's reading of the "
             "library's source) | library version | claim ε | verdict | ε_lower | ε_point | "
             "pair |", "|---|---|---|---|---|---:|---|---:|---:|---|"]
    for r in doc["rows"]:
        p = None if r["eps_point"] is None else float(r["eps_point"])  # JSON: "inf"
        point = "—" if p is None else "∞" if p == float("inf") else f"{p:.3f}"
        seeded = "" if r["seedable"] else " (unseeded)"
        lines.append(f"| `{r['target']}` | {r['example']} | {r['nan']} | "
                     f"{r.get('cause', '—').replace('|', '/')} | {r['library']} "
                     f"{r['version']}{seeded} | {r['claim']:g} | **{r['verdict']}** | "
                     f"{r['eps_lower']:.3f} | {point} | {r['pair']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=CALLS, help="calls per side per audit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS), help="the JSON to write (and .md)")
    args = parser.parse_args(argv)
    if args.calls < 100 or args.seed < 0:  # before any call: one line, exit 2
        print(f"error: --calls must be an integer >= 100 and --seed >= 0, got --calls="
              f"{args.calls} --seed={args.seed}", file=sys.stderr)
        return 2
    doc = run(args.calls, args.seed)
    out = Path(args.out)
    save_json(doc, out)
    write_text_atomic(markdown(doc), out.with_suffix(".md"))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
