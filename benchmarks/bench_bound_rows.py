"""Wall time of the accountant's slow rows, as a user runs them: ``python -m audit bound
--config`` on a Gaussian sum over one column in [−1, 1] (NA read as 0, ε = 1, δ = 1e-5,
record-level missingness), persistent masks (r = 0.5) at k releases and fresh masks at
k = 10^4; and histograms of 5 categories with a bin of missing entries (Laplace ε = 1, or
Gaussian at (1, 1e-5)), shared masks, at k releases, final δ 1e-5 (docs/THEORY.md §10.9).
One JSON line per setting: k, masks, p*, the worst case's value and error, wall seconds and
the command's peak resident memory (the child's, from ``getrusage``).

    python benchmarks/bench_bound_rows.py [--persistent-k 4,12] [--p-star 0.1,0.5,0.9]
        [--histogram-k 1,10,100]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SETTING = """[scenario]
noise = "gaussian"
epsilon = 1.0
delta = 1e-5
query = "sum"
d = 1
n = 100
bound = 1.0
domain = [-1.0, 1.0]
na_value = 0.0

[missingness]
kind = "mcar-row"
p_star = {p_star}

[releases]
count = {k}
masks = "{masks}"
{extra}
"""

HISTOGRAM = """[scenario]
noise = "{noise}"
epsilon = 1.0
{delta}
query = "histogram"
d = 5
n = 100
na_category = true

[missingness]
kind = "mcar-row"
p_star = {p_star}

[releases]
count = {k}
masks = "shared"
"""

WORST = re.compile(r"epsilon = ([0-9.e+-]+) at delta = [0-9.e+-]+ \(exact, error ([0-9.e+-]+)\)")


def _row(k: int, masks: str, p_star: float, folder: Path, noise: str | None = None) -> dict:
    path = folder / f"{masks}-{k}-{p_star}-{noise}.toml"
    if noise is None:
        extra = "persistence = 0.5" if masks == "persistent" else ""
        path.write_text(SETTING.format(p_star=p_star, k=k, masks=masks, extra=extra))
    else:
        delta = "delta = 1e-5" if noise == "gaussian" else ""
        path.write_text(HISTOGRAM.format(noise=noise, delta=delta, p_star=p_star, k=k))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    final = [] if noise is None else ["--target-delta", "1e-5"]
    out = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", str(path),
                          *final], cwd=ROOT, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    found = WORST.search(out.stdout)
    return {"statistic": "sum" if noise is None else f"{noise} histogram", "k": k,
            "masks": masks, "p_star": p_star,
            "epsilon": float(found.group(1)) if found else None,
            "error": float(found.group(2)) if found else None,
            "seconds": round(seconds, 2),
            "peak_rss_mib": round(max(peak, before) / 1024, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persistent-k", default="4,12")
    ap.add_argument("--fresh-k", default="10000")
    ap.add_argument("--p-star", default="0.1,0.5,0.9")
    ap.add_argument("--histogram-k", default="1,10,100")
    args = ap.parse_args()
    p_stars = [float(p) for p in args.p_star.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        for k in (int(v) for v in args.persistent_k.split(",") if v):
            for p in p_stars:
                print(json.dumps(_row(k, "persistent", p, Path(tmp))), flush=True)
        for k in (int(v) for v in args.fresh_k.split(",") if v):
            print(json.dumps(_row(k, "fresh", p_stars[0], Path(tmp))), flush=True)
        for k in (int(v) for v in args.histogram_k.split(",") if v):
            for noise in ("laplace", "gaussian"):
                print(json.dumps(_row(k, "shared", 0.3, Path(tmp), noise)), flush=True)


if __name__ == "__main__":
    main()
