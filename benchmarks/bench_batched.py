"""Batched releases of PipelineDP and OpenDP Polars: releases per second of one library call
over T public partitions (keys) against calls per second of the unbatched form, in one process.

For datasets of n records × d values (every entry a value: ``n·d`` rows per dataset), it times
``impl.batch(stack, rng, partitions=T)`` (``audit.adapters.pipelinedp``: dataset t of each
block of T as public partition t of one ``DPEngine.aggregate``; ``audit.adapters.
opendp_polars``: one ``group_by`` over T public keys) for each T of ``--partitions``,
and the unbatched ``impl(data, rng)`` (one engine call per dataset), best of ``--repeats``;
then the peak memory of one batched stack of ``--peak-releases`` datasets at the default T
(``tracemalloc``: Python allocations during the call).

With ``--verdicts SEED ...`` it instead runs the NaN regression audits of ``--library``'s examples
(``experiments/nan_regression.py``'s ``audit_example``: the pair fixed by rule, 4,000 calls per
side) batched and unbatched for each seed, and prints the verdicts side by side (nothing is
written under ``results/``).

    PYTHONPATH=. python benchmarks/bench_batched.py [--n 10] [--d 1] [--releases 2000]
        [--partitions 1 2 5 10 20 50 100 200] [--target pipelinedp:sum]
    PYTHONPATH=. python benchmarks/bench_batched.py --verdicts 0 1 2 [--library opendp-polars]
    PYTHONPATH=. python benchmarks/bench_batched.py --floor      # PipelineDP's µs per call,
                                                  # partition and row; the speed-up ceiling
    PYTHONPATH=. python benchmarks/bench_batched.py --profile --partitions 50 [--top 15]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

BOUNDS = {"bounds": (-1.0, 1.0)}
PARAMS = {"pipelinedp:sum": BOUNDS, "pipelinedp:mean": BOUNDS, "pipelinedp:count": {},
          "pipelinedp:variance": BOUNDS,
          "pipelinedp:percentile": {**BOUNDS, "percentile": 50.0},
          "opendp-polars:sum": BOUNDS, "opendp-polars:mean": BOUNDS, "opendp-polars:len": {}}


def default_partitions(target: str, rows: int) -> int:
    """The T the target's batched form uses by default for datasets of ``rows`` values."""
    if target.startswith("pipelinedp:"):
        from audit.adapters.pipelinedp import partitions_per_call

        return partitions_per_call(rows)
    from audit.adapters.opendp_polars import partitions_per_call

    return partitions_per_call(rows)


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def throughput(args) -> None:
    from audit.adapters import make_implementation

    impl = make_implementation(args.target, epsilon=1.0, params=PARAMS[args.target])
    rng = np.random.default_rng(0)
    stack = rng.uniform(-1.0, 1.0, (args.releases, args.n, args.d))
    calls = max(args.releases // 10, 50)
    unbatched = calls / _best(lambda: [impl(x, rng) for x in stack[:calls]], args.repeats)
    default = default_partitions(args.target, args.n * args.d)
    print(f"{args.target}, n={args.n}, d={args.d} ({args.n * args.d} rows per "
          f"dataset), one process; default T = {default}")
    print(f"  unbatched: {unbatched:9.0f} calls/s")
    for t in sorted(set(args.partitions) | {default}):
        m = min(args.releases, max(t * 5, 200))
        rate = m / _best(lambda t=t, m=m: impl.batch(stack[:m], rng, partitions=t),
                         args.repeats)
        mark = "  (default)" if t == default else ""
        print(f"  T = {t:4d}: {rate:9.0f} releases/s = {rate / unbatched:5.2f}× unbatched{mark}")
    tracemalloc.start()
    impl.batch(rng.uniform(-1.0, 1.0, (args.peak_releases, args.n, args.d)), rng)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"  peak Python memory of one batched call on {args.peak_releases} datasets at "
          f"T = {default}: {peak / 2**20:.1f} MiB (the stack itself: "
          f"{args.peak_releases * args.n * args.d * 8 / 2**20:.1f} MiB)")


def _engine_call(pdp, rows: list, partitions: int, options: dict) -> dict:
    """One ``DPEngine.aggregate`` of PipelineDP's SUM as the adapter makes it (bounds
    (−1, 1), ε/2 = 0.5, one value per unit), with extra ``AggregateParams`` ``options``."""
    accountant = pdp.NaiveBudgetAccountant(total_epsilon=0.5, total_delta=0.0)
    engine = pdp.DPEngine(accountant, pdp.LocalBackend())
    params = pdp.AggregateParams(noise_kind=pdp.NoiseKind.LAPLACE, metrics=[pdp.Metrics.SUM],
                                 max_partitions_contributed=1, max_contributions_per_partition=1,
                                 min_value=-1.0, max_value=1.0, **options)
    extractors = pdp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                    partition_extractor=lambda r: r[1],
                                    value_extractor=lambda r: r[2])
    out = engine.aggregate(rows, params, extractors, public_partitions=list(range(partitions)))
    accountant.compute_budgets()
    return dict(out)


#: engine options that skip stages of ``DPEngine.aggregate`` (``--floor``): the contribution
#: bounding (a no-op on the adapter's input, where every unit has k ≤ k values in one
#: partition) and the filter to the public partitions
OPTIONS = {"as the adapter calls it": {},
           "bounding and filter skipped": {"contribution_bounds_already_enforced": True,
                                           "public_partitions_already_filtered": True}}


def floor(repeats: int) -> None:
    """PipelineDP's cost per engine call, per public partition and per row (one privacy unit
    with one value), from the marginal times of calls of 1 × 1, 1 × 40 and 50 × 1
    (partitions × rows per partition), best of ``repeats``; and the largest ratio of
    batched releases to unbatched calls per second those allow at n·k rows per dataset,
    (call + partition + n·k·row) / (partition + n·k·row), T → ∞."""
    import pipeline_dp as pdp

    def best(partitions: int, per: int, options: dict) -> float:
        rows = [(t * per + i, t, 0.1) for t in range(partitions) for i in range(per)]
        reps = max(5, 2000 // (partitions * per))
        _engine_call(pdp, rows, partitions, options)
        return _best(lambda: [_engine_call(pdp, rows, partitions, options)
                              for _ in range(reps)], repeats) / reps

    print("PipelineDP SUM, one process: marginal cost (µs) and the ceiling of the batched "
          "speed-up (T → ∞)")
    for name, options in OPTIONS.items():
        one, rows40, parts50 = best(1, 1, options), best(1, 40, options), best(50, 1, options)
        row = (rows40 - one) / 39
        part = (parts50 - one) / 49 - row
        call = one - part - row
        ceilings = ", ".join(f"n·k = {r}: {(call + part + r * row) / (part + r * row):.2f}×"
                             for r in (1, 10, 100))
        print(f"  {name:28s} per call {call * 1e6:6.1f}, per partition {part * 1e6:5.1f}, "
              f"per row {row * 1e6:5.1f} | ceiling {ceilings}")


def profile(args) -> None:
    """cProfile of the adapter's batched form at T = ``--partitions``' largest (one engine
    call) against as many unbatched calls, the top entries by own time."""
    import cProfile
    import io
    import pstats

    from audit.adapters import make_implementation

    impl = make_implementation(args.target, epsilon=1.0, params=PARAMS[args.target])
    t = max(args.partitions)
    rng = np.random.default_rng(0)
    stack = rng.uniform(-1.0, 1.0, (t * 20, args.n, args.d))
    impl.batch(stack[:t], rng, partitions=t)  # warm
    for name, run in (("unbatched", lambda: [impl(x, rng) for x in stack]),
                      (f"batched T = {t}", lambda: impl.batch(stack, rng, partitions=t))):
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        run()
        prof.disable()
        elapsed = time.perf_counter() - t0
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(args.top)
        print(f"{args.target} {name}: {len(stack)} releases, {elapsed / len(stack) * 1e6:.1f} "
              f"µs per release under the profiler")
        print("\n".join(line for line in text.getvalue().splitlines()
                        if line.strip() and not line.startswith(("   Ordered", "   List"))))


def verdicts(seeds: list[int], calls: int, library: str = "pipelinedp") -> None:
    from audit.adapters import make_implementation, registry
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.implementation import ImplementationSubject
    from audit.pipeline.runner import run_audit
    from experiments import nan_regression as nr

    print(f"NaN regression rows of {library}, {calls} calls per side, batched vs unbatched")
    for target, example in registry.examples():
        if not target.startswith(f"{library}:"):
            continue
        function = target.partition(":")[2]
        if registry.get_adapter(library).target(function).defect:
            print(f"  {target:22s} {example.name:9s} skipped: a declared library defect")
            continue
        probe = make_implementation(target, epsilon=example.epsilon, delta=example.delta,
                                    params=example.kwargs())
        if probe.batch is None:
            print(f"  {target:22s} {example.name:9s} skipped: no batched form")
            continue
        decided = {False: [], True: []}
        for seed in seeds:
            row = []
            for batch in (False, True):
                impl = make_implementation(target, epsilon=example.epsilon,
                                           delta=example.delta, params=example.kwargs())
                doc = _regression_config(nr, example, calls, seed)
                cfg = config_from_dict(doc, name=f"{target} [{example.name}]")
                t0 = time.perf_counter()
                res = run_audit(subject=ImplementationSubject.from_config(cfg, impl,
                                                                          batch=batch))
                v = nr.verdict(res.eps_lower, res.eps_point, res.eps_claim)
                decided[batch].append(v)
                row.append(f"{v:10s} ε_lower {res.eps_lower:6.3f} "
                           f"({time.perf_counter() - t0:5.1f} s)")
            print(f"  {target:22s} {example.name:9s} seed {seed}: unbatched {row[0]} | "
                  f"batched {row[1]}", flush=True)
        print(f"  {target:22s} {example.name:9s} row verdict over the seeds (the table's "
              f"rule): unbatched {nr.combined(decided[False])}, batched "
              f"{nr.combined(decided[True])}", flush=True)


def _regression_config(nr, example, calls: int, seed: int) -> dict:
    """The config ``nan_regression.audit_example`` audits (its pair by rule)."""
    import math

    v = nr.pair_value(example.params)
    rest = [[0.0]] * (nr.N_RECORDS - 1)
    return {"scenario": {"mechanism": "laplace", "epsilon": example.epsilon,
                         "n": nr.N_RECORDS, "d": 1, "bound": nr._bound(example.params),
                         "query": "sum"},
            "missingness": {"kind": "mcar-iid", "rate": 0.0},
            "pair": {"z": [[v]] + rest, "z_prime": [[math.nan]] + rest},
            "audit": {"trials": calls, "seed": seed, "confidence": nr.CONFIDENCE}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--d", type=int, default=1)
    parser.add_argument("--target", choices=sorted(PARAMS), default="pipelinedp:sum")
    parser.add_argument("--releases", type=int, default=2000)
    parser.add_argument("--partitions", type=int, nargs="+",
                        default=[1, 2, 5, 10, 20, 50, 100, 200])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peak-releases", type=int, default=10_000)
    parser.add_argument("--verdicts", type=int, nargs="+", metavar="SEED")
    parser.add_argument("--floor", action="store_true",
                        help="PipelineDP's cost per call, partition and row, and the ceiling "
                             "of the batched speed-up they allow")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile one batched call at the largest --partitions against "
                             "unbatched calls")
    parser.add_argument("--top", type=int, default=15, help="profile entries (--profile)")
    parser.add_argument("--calls", type=int, default=4000, help="calls per side (--verdicts)")
    parser.add_argument("--library", choices=("pipelinedp", "opendp-polars"),
                        default="pipelinedp", help="whose NaN rows (--verdicts)")
    args = parser.parse_args(argv)
    for name in ("n", "d", "releases", "repeats", "peak_releases", "calls"):
        if getattr(args, name) < 1:
            print(f"error: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if min(args.partitions) < 1:
        print("error: --partitions must be at least 1", file=sys.stderr)
        return 2
    if args.verdicts is not None:
        verdicts(args.verdicts, args.calls, args.library)
    elif args.floor:
        floor(args.repeats)
    elif args.profile:
        profile(args)
    else:
        throughput(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
