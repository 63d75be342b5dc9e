"""The online mode (``audit.mode = "online"``: no pilot, regions chosen from past calls):
stopping times, type-I error, curve claims, and estimation against the fixed mode.

1. **Stopping**: a Laplace release of true ε = 2 (a sum of 3 records in [−1, 1] whose pair
   moves it by 2, Laplace noise of scale 1) claimed at ε = 1, audited by ``run_audit`` in
   online mode (stop on refutation, 95 %), ``--seeds`` seeds: the calls made in total (both
   sides) until the claim fell.
2. **Type-I error**: ``--nulls`` runs of the stopped test on a release whose true ε equals
   the claim (ε = 1, Laplace), each with a budget of 2,000 calls per side, the chunks the
   runner draws (10 per side, ×1.25, at most 1,000), fed to
   :class:`audit.estimation.online.OnlineMonitor` directly (the runner's code path without
   its per-chunk overhead): the share refuted, against α = 0.05.
3. **Curve claims**: :class:`audit.estimation.online.OnlineCurveTest` of the claim "1-GDP"
   on a Gaussian shift of μ = 2 (stopping, ``--seeds`` runs) and of μ = 1 (``--nulls`` / 4
   null runs of 2,000 calls per side).
4. **Estimation at equal expected cost**: ``run_audit`` in fixed mode at 20,000 calls per
   side (plus its pilot) against online mode with ``stop = "budget"`` at the fixed run's
   total calls per side, on Laplace releases of true ε = 1 and 2, ``--estimates`` seeds each:
   the ratio of the mean ε_lower.

    python benchmarks/bench_online.py [--seeds 200] [--nulls 2000] [--estimates 20]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy import stats

from audit.estimation.online import OnlineCurveTest, OnlineMonitor
from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.runner import run_audit
from audit.policy import DEFAULT_POLICY
from audit.theory.tradeoff.conversions import delta_for_epsilon
from audit.theory.tradeoff.curves import GaussianTradeoff

ALPHA = 0.05


def laplace_sum(scale: float) -> CallableImplementation:
    """The sum of 3 records in [−1, 1] plus Laplace noise of ``scale``, claimed ε = 1 (true
    ε 2/scale on the pair below)."""
    def one(data, rng):
        return float(np.clip(data, -1.0, 1.0).sum() + rng.laplace(scale=scale))

    def batch(datasets, rng):
        x = np.clip(np.asarray(datasets, dtype=np.float64), -1.0, 1.0).sum(axis=(1, 2))
        return x + rng.laplace(scale=scale, size=x.shape[0])

    return CallableImplementation(func=one, claim=Claim(1.0, 0.0, "a Laplace sum"),
                                  name=f"laplace-sum[{scale:g}]", batch_func=batch)


def _audit(scale: float, mode: str, trials: int, seed: int, stop: str = "refuted"):
    return run_audit(_doc(mode, trials, seed, stop), implementation=laplace_sum(scale))


def _doc(mode: str, trials: int, seed: int, stop: str = "refuted") -> dict:
    audit = {"trials": trials, "seed": seed, "mode": mode, "confidence": 1 - ALPHA}
    if mode == "online":
        audit["stop"] = stop
    return {"scenario": {"noise": "laplace", "epsilon": 1.0, "query": "sum", "d": 1, "n": 3,
                         "bound": 1.0},
            "missingness": {"kind": "mcar-iid", "rate": 0.0},
            "pair": {"z": [[1.0], [0.0], [0.0]], "z_prime": [[-1.0], [0.0], [0.0]]},
            "audit": audit}


def _feed(test, rng, draw, shift: float, budget: int) -> int:
    """The runner's chunks (:func:`audit.pipeline.runner._run_online`) until stop or budget."""
    rule = DEFAULT_POLICY.online
    size, done = float(rule.first), 0
    while done < budget:
        k = min(int(size), budget - done)
        done += k
        if test.update(draw(rng, shift, k), draw(rng, 0.0, k)):
            break
        size = min(size * rule.growth, rule.chunk_cap(budget))
    return done


def _laplace(rng, shift, k):
    return rng.laplace(shift, 1.0, k)


def _gauss(rng, shift, k):
    return rng.normal(shift, 1.0, k)


def stopping(seeds: int) -> None:
    t0 = time.time()
    total = np.array([2 * _audit(1.0, "online", 100_000, s).trials for s in range(seeds)])
    q10, q50, q90 = np.percentile(total, [10, 50, 90])
    print(f"1. stopping, true ε = 2 claimed 1, {seeds} seeds ({time.time() - t0:.0f} s): calls "
          f"in total (both sides) median {q50:.0f}, 10 % {q10:.0f}, 90 % {q90:.0f}, "
          f"largest {total.max()}")


def type_one(nulls: int) -> None:
    t0 = time.time()
    refuted = 0
    for s in range(nulls):
        mon = OnlineMonitor([1.0], 0.0, ALPHA)
        _feed(mon, np.random.default_rng(10_000 + s), _laplace, 1.0, 2_000)
        refuted += mon.bound().refutes(1.0)
    allowed = int(stats.binom.ppf(0.999, nulls, ALPHA))
    print(f"2. type-I, true ε = claim = 1, {nulls} runs of 2,000 calls per side "
          f"({time.time() - t0:.0f} s): {refuted} refuted ({refuted / nulls:.4f}; α = {ALPHA}, "
          f"the 0.999 quantile of Binomial({nulls}, α) is {allowed})")


def curves(seeds: int, nulls: int) -> None:
    t0 = time.time()
    f = GaussianTradeoff(1.0)
    grid = np.linspace(0.0, 6.0, 25)
    deltas = {float(e): delta_for_epsilon(f, float(e)) for e in grid}

    def test():
        return OnlineCurveTest(deltas.__getitem__, grid, ALPHA)

    stops = []
    for s in range(seeds):
        t = test()
        stops.append(2 * _feed(t, np.random.default_rng(20_000 + s), _gauss, 2.0, 10_000))
    refuted = 0
    for s in range(nulls):
        t = test()
        _feed(t, np.random.default_rng(30_000 + s), _gauss, 1.0, 2_000)
        refuted += t.refuted
    print(f"3. curve claim 1-GDP ({time.time() - t0:.0f} s): on μ = 2, calls in total median "
          f"{np.median(stops):.0f} (90 % {np.percentile(stops, 90):.0f}, {seeds} runs); on "
          f"μ = 1, {refuted} of {nulls} null runs refuted (the 0.999 quantile of "
          f"Binomial({nulls}, α) is {int(stats.binom.ppf(0.999, nulls, ALPHA))})")


def estimation(seeds: int) -> None:
    for eps_true in (1.0, 2.0):
        t0 = time.time()
        scale = 2.0 / eps_true
        fixed, online = [], []
        for s in range(seeds):
            res = _audit(scale, "fixed", 20_000, 100 + s)
            fixed.append(res.eps_lower)
            calls = res.trials + res.pilot_trials
            online.append(_audit(scale, "online", calls, 200 + s, "budget").eps_lower)
        f, o = np.mean(fixed), np.mean(online)
        print(f"4. estimation, true ε = {eps_true:g}, fixed 20,000 + pilot {res.pilot_trials:,} "
              f"calls per side vs online {calls:,} ({seeds} seeds, {time.time() - t0:.0f} s): "
              f"mean ε_lower fixed {f:.4f}, online {o:.4f}, ratio {o / f:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--nulls", type=int, default=2000)
    ap.add_argument("--estimates", type=int, default=20)
    args = ap.parse_args()
    if min(args.seeds, args.nulls, args.estimates) < 1:  # before any call: one line, exit 2
        print(f"error: --seeds, --nulls and --estimates must be >= 1, got --seeds={args.seeds} "
              f"--nulls={args.nulls} --estimates={args.estimates}", file=sys.stderr)
        raise SystemExit(2)
    stopping(args.seeds)
    type_one(args.nulls)
    curves(args.seeds, max(1, args.nulls // 4))
    estimation(args.estimates)


if __name__ == "__main__":
    main()
