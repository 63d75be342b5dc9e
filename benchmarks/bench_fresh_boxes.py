"""The fresh-mask worst case of ``bound --config`` (docs/THEORY.md §10.4): for a sum over
[0, 1] with NA read as 0 (count-like), 0.3 (inside) or 2 (outside), Laplace noise at ε ∈ {1, 4}
per release (b = span/ε) and Gaussian at μ ∈ {0.5, 2} (σ = span/μ), q ∈ {0.1, 0.5} and k
releases, final δ 1e-5: the worst candidate pair (the lower end), the candidates' envelope
composed (the upper end before the boxes), the row's upper end, the ratios of both to the
lower end, the boxes evaluated and the wall seconds of the row, one JSON line per setting
(one core; the run's peak resident memory on the last line).

    python benchmarks/bench_fresh_boxes.py [--releases 10,100] [--noise laplace,gaussian]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import time

from audit.theory.fresh_boxes import envelope_epsilon
from audit.theory.pld import MAX_PLD_RELEASES
from audit.theory.worst_case import Setting, substitution_sensitivity, worst_case

NAS = (0.0, 0.3, 2.0)
STRENGTHS = {"laplace": (1.0, 4.0), "gaussian": (0.5, 2.0)}


def _list(text: str, kind, check, name: str) -> list:
    try:
        values = [kind(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or not all(check(v) for v in values):
        raise argparse.ArgumentTypeError(f"{name} must be a comma-separated list, got {text!r}")
    return values


def _row(noise: str, na: float, strength: float, q: float, k: int) -> dict:
    span = substitution_sensitivity(0.0, 1.0, na)
    s = Setting(noise, span / strength, (0.0, 1.0), na, q, k, "fresh")
    t0 = time.perf_counter()
    w = worst_case(s, 1e-5)
    seconds = time.perf_counter() - t0
    cands = s.candidates()
    names = list(cands)
    laws = [(s.law(cands[a]), s.law(cands[b])) for i, a in enumerate(names)
            for b in names[i + 1:]]
    envelope = envelope_epsilon(laws, k, 1e-5)
    boxes = re.search(r"over (\d+) boxes", w.method)
    return {"noise": noise, "na": na, "strength": strength, "q": q, "k": k,
            "lower": round(w.lower, 5), "envelope": round(envelope, 5),
            "upper": round(w.epsilon, 5), "envelope_ratio": round(envelope / w.lower, 4),
            "ratio": round(w.epsilon / w.lower, 4), "exact": w.exact,
            "boxes": int(boxes.group(1)) if boxes else 0, "seconds": round(seconds, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", default="10,100", type=lambda t: _list(
        t, int, lambda v: 2 <= v <= MAX_PLD_RELEASES, f"--releases (each in [2, "
        f"{MAX_PLD_RELEASES}])"))
    parser.add_argument("--noise", default="laplace,gaussian", type=lambda t: _list(
        t, str, lambda v: v in STRENGTHS, "--noise (laplace, gaussian)"))
    args = parser.parse_args(argv)
    for noise in args.noise:
        for na in NAS:
            for strength in STRENGTHS[noise]:
                for q in (0.1, 0.5):
                    for k in args.releases:
                        print(json.dumps(_row(noise, na, strength, q, k)), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mib": round(peak, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
