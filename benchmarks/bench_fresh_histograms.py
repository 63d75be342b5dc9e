"""Fresh-mask histogram rows of ``bound --config`` (docs/THEORY.md §10.9): Laplace noise at
b ∈ {1, 2, 5} (ε = 2/b per release) and Gaussian at σ ∈ {1, 2, 4}, with and without the bin
of missing entries, p* ∈ {0.05, 0.3, 0.95} and k releases, final δ 1e-5: the row's lower and
upper ends, their ratio, whether it is exact, the worst pair, the per-release theorem
C_{p*}(f)^{⊗k} beside it and the wall seconds, one JSON line per setting (one core; the
run's peak resident memory on the last line).

    python benchmarks/bench_fresh_histograms.py [--releases 10 100] [--noise laplace gaussian]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from audit.theory import histogram as H
from audit.theory.pld import MAX_PLD_RELEASES

SCALES = {"laplace": (1.0, 2.0, 5.0), "gaussian": (1.0, 2.0, 4.0)}


def _releases(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        k = 0
    if not 2 <= k <= MAX_PLD_RELEASES:
        raise argparse.ArgumentTypeError(f"each release count must be an integer in [2, "
                                         f"{MAX_PLD_RELEASES}], got {text!r}")
    return k


def _row(noise: str, scale: float, na: bool, q: float, k: int) -> dict:
    s = H.HistogramSetting(noise, scale, q, k, "fresh", na)
    t0 = time.perf_counter()
    w = H.histogram_worst_case(s, 1e-5)
    seconds = time.perf_counter() - t0
    return {"noise": noise, "scale": scale, "na_bin": na, "q": q, "k": k,
            "lower": round(w.lower, 5), "upper": round(w.epsilon, 5),
            "ratio": round(w.epsilon / w.lower, 5), "exact": w.exact, "pair": "/".join(w.pair),
            "theorem": round(H._theorem_epsilon(s, 1e-5), 5), "seconds": round(seconds, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="+", type=_releases, default=[10, 100])
    parser.add_argument("--noise", nargs="+", choices=sorted(SCALES),
                        default=["laplace", "gaussian"])
    args = parser.parse_args(argv)
    for noise in args.noise:
        for scale in SCALES[noise]:
            for na in (True, False):
                for q in (0.05, 0.3, 0.95):
                    for k in args.releases:
                        print(json.dumps(_row(noise, scale, na, q, k)), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mib": round(peak, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
