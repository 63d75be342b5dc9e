"""Experiment 9: where a missing value lands (read at the midpoint of the range, at an
endpoint, or dropped), under substitution neighbours and MCAR iid missingness.

Setting: n = 20 records of d = 1 feature with values in a range [lo, hi] of width 2B (B = 1);
every record is masked independently with probability π ∈ {0, 0.1, 0.3, 0.5, 0.7, 0.9}
(``mcar-iid``: p* = 1 − π, ρ = 1); a Laplace release claims ε = 1 per substituted record.
Three readings of a missing value (:data:`READINGS`):

midpoint
    data in [−B, B]; the sum with NA read as 0 (the project's own convention, THEORY §1);
    noise Laplace(2B/ε), the substitution sensitivity 2B.
endpoint
    data in [0, 2B]; the same sum with NA read as 0 (zero-fill of non-negative data); noise
    Laplace(2B/ε).
dropped
    data in [−B, B]; the MEAN of the k observed entries (the range's centre when k = 0), noise
    Laplace(2B/(nε)): the calibration for the mean of n entries that a library would use.
    Dropping a record's value changes the denominator, so a changed entry moves the mean of k
    entries by 2B/k, not 2B/n. For a SUM, dropping a missing value and reading it as 0 are the
    same release: a dropped sum is the midpoint or the endpoint reading, wherever 0 lies.

Exact ε of the zero-fill sums (derived here). Let q = 1 − π, b = 2B/ε, L the Laplace(b)
density, and let the NA reading 0 sit at the fraction t = −lo/(hi − lo) of the range
(midpoint t = 1/2, endpoint t = 0); s = max(t, 1 − t). Neighbours differ in record 1 (values
a, c ∈ [lo, hi]); the other records add one independent random shift S, the same law on both
sides, so p(y)/p′(y) = E_S[π L(y−S) + q L(y−S−a)] / E_S[π L(y−S) + q L(y−S−c)] is at most
its largest value at a fixed S, attained at S ≡ 0 (the others at 0, which reads the same
masked or not). At S = 0 the ratio is (π + q u)/(π + q v), u = L(y−a)/L(y), v = L(y−c)/L(y),
increasing in u and decreasing in v, with u ≤ e^{|a|/b} ≤ e^{sε} (0 is at most s·2B from
either end), v ≥ e^{−sε} and u/v ≤ e^{|a−c|/b} ≤ e^ε. Taking v = max(u e^{−ε}, e^{−sε}) and
then u = e^{sε} gives the supremum, reached by a = the end far from 0, c = the other end, as
y → ±∞ on a's side:

    ε_true(s) = ln( (π + q e^{sε}) / (π + q e^{−(1−s)ε}) )            (:func:`zero_fill_epsilon`)
    midpoint:  ln( (π + q e^{ε/2}) / (π + q e^{−ε/2}) )
    endpoint:  ln( π + q e^{ε} ) = ln(1 + p*(e^ε − 1)),  exactly [RPS] Theorem 4.5 at d = 1.

d ε_true/ds = ε[x₁/(π + x₁) − x₂/(π + x₂)] with x₁ = q e^{sε} > x₂ = q e^{(s−1)ε}, which is
> 0 for 0 < π < 1: the midpoint is the most private place for a missing value, an endpoint
the least. At π = 0 (p* = 1) every reading gives ε: the difference vanishes. The audited pairs
(z₁ = lo vs hi, the other records at 0) are these worst pairs; their ε_pair is computed by the
project's exact integrator (:func:`audit.theory.pair.pair_epsilon` on the mixture over record
1's mask) and stored beside the closed form (``eps_closed_form``), which must agree.

Theorem 4.5 with p* = 1 − π and C̃₁/C₁ = 1 (d = 1) is ln(1 + p*(e^ε − 1)). It covers both
zero-fill readings (A is ε-DP on incomplete data: 0 lies in the range, so a missing value moves
the sum by at most 2B) but sees only p*: tight for the endpoint, loose for the midpoint (by a
factor 1.54 at π = 0.9). It does not cover the dropped mean, which is not ε-DP on incomplete
data; it is drawn there as what a release ε-DP on incomplete data would meet.

The dropped mean's pair is z₁ = −B vs +B with the other n − 1 records at +B (the pair of
``library_audit``'s nanmean). With K ~ Binomial(n − 1, q) observed other records, z releases
Laplace(b′) around B(K − 1)/(K + 1) when record 1 is observed (probability q), z′ around B;
with record 1 masked both release around B (K ≥ 1) or the centre 0 (K = 0); b′ = 2B/(nε).
Its ε_pair is computed by the same integrator (for Laplace mixtures of one scale, sup |ln p/q|
lies at a centre or a tail, THEORY §8.3). Why the others at +B: z′ then releases B + noise
whatever the mask (but the all-masked one), while z's mean falls towards −B the fewer entries
are observed. Among pairs whose other records share one value c, it is the worst on a grid of
21 values of c in [−B, B] (``eps_pair_common_others_max``; at π = 0 all tie at ε); it is not
proven worst over every configuration of the others, but it is a legal pair, so its ε_pair is
a lower bound on the release's true ε. Most of it comes from masks that leave few other
entries observed (record 1 observed alone has probability qπ^{n−1}: 1·10⁻⁶ at π = 0.5, 0.01
at π = 0.9), which a budget of 10⁵–10⁶ calls sees only at large π: the audit's ε_lower stays
far below ε_pair at π = 0.5 and 0.7, while it exceeds Theorem 4.5 and the claim.

Audits: each reading is a plain-numpy :class:`audit.model.implementation.CallableImplementation`
with a batched form (:func:`implementation`), audited as a black box on its explicit pair by
:func:`audit.pipeline.runner.run_audit` (the policy's black-box attack and pilot,
``audit.policy``; fixed mode, one-sided Clopper–Pearson at 95 %). Calls per side:
:data:`TRIALS` (default 400,000: the whole run takes 15–30 s on one core; ``full`` 10×).
Every ε_lower must lie below its ε_pair.

Rows: the audit's :meth:`~audit.pipeline.results.AuditResult.to_dict` (its ``eps_theory`` is
the claim amplified by Theorem 3.2, equal to Theorem 4.5 at d = 1), with ``reading``,
``rate``, ``eps_pair`` and ``eps_pair_error`` (the exact integrator on the pair), ``eps_exact``
(the same number, under the key the report's † mark reads), ``eps_closed_form`` (zero-fill
readings), ``eps_pair_common_others_max`` (dropped: the largest ε over the grid of common
values of the others), ``thm_4_5``, ``thm_4_5_applies``, ``claim_refuted`` and
``amplified_refuted``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from experiments.common import check_size, config, record
from experiments.plotting import column

NAME = "na_position"
TITLE = ("Where a missing value lands: read at the midpoint, at an endpoint, or dropped "
         "(sum and mean, MCAR iid)")
CAPTION = """\
A Laplace release claiming ε = 1 on n = 20 records of one feature in a range of width 2, each
record masked independently with probability π. Left: the sum with a missing value read as 0,
0 the midpoint of the range (data in [−1, 1], blue) or an endpoint (data in [0, 2], zero-fill of
non-negative data, red): lines with open squares are the exact ε of the worst pair (ε_pair),
filled dots the audit's 95 % lower bound ε_lower, the black dashed line Theorem 4.5 with
p* = 1 − π, which the endpoint reading meets exactly and the midpoint stays below; at π = 0 all
are ε. Right (log scale): the same with the dropped reading, a mean of the observed entries
with noise calibrated to n entries (purple), whose ε_pair and ε_lower rise above Theorem 4.5
and the claimed ε (grey dotted): the theorem does not cover a mean whose denominator moves.
"""
RATES = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9)
N_RECORDS = 20
BOUND = 1.0  # B: every range has width 2B
EPSILON = 1.0
TRIALS = {"smoke": 2_000, "default": 400_000, "full": 4_000_000}
#: values c of the other records scanned for the dropped mean's pair (others all at c)
OTHERS_GRID = 21


@dataclass(frozen=True)
class Reading:
    """One reading of a missing value: the data's range, the statistic, the audited pair.

    Parameters
    ----------
    key : str
        ``"midpoint"``, ``"endpoint"`` or ``"dropped"``.
    label : str
        For the figure and the findings.
    lo, hi : float
        The data's range (lo < hi); a missing value is read as 0 by the sums.
    mean : bool
        The mean of the observed entries (noise for n entries) instead of the zero-fill sum.
    others : float
        The value of the records other than the first in the audited pair.
    """

    key: str
    label: str
    lo: float
    hi: float
    mean: bool
    others: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(f"lo and hi must be finite with lo < hi, got lo={self.lo!r}, "
                             f"hi={self.hi!r}")
        if not self.mean and not self.lo <= 0.0 <= self.hi:
            raise ValueError(f"a zero-fill sum reads NA as 0, which must lie in [lo, hi], got "
                             f"lo={self.lo!r}, hi={self.hi!r}")
        if not self.lo <= self.others <= self.hi:
            raise ValueError(f"others must be in [{self.lo}, {self.hi}], got "
                             f"others={self.others!r}")

    @property
    def width(self) -> float:
        return self.hi - self.lo

    @property
    def centre(self) -> float:
        return 0.5 * (self.lo + self.hi)


READINGS = (
    Reading("midpoint", "sum, data in [−B, B], NA read as 0", -BOUND, BOUND, False, 0.0),
    Reading("endpoint", "sum, data in [0, 2B], NA read as 0", 0.0, 2 * BOUND, False, 0.0),
    Reading("dropped", "mean of the observed entries, noise for n", -BOUND, BOUND, True,
            BOUND),
)
_THM_LABEL = "Theorem 4.5 (p* = 1 − π, ρ = 1)"
COLOURS = {"midpoint": "tab:blue", "endpoint": "tab:red", "dropped": "tab:purple"}


def reading(key: str) -> Reading:
    """The reading named ``key`` (one of :data:`READINGS`)."""
    for r in READINGS:
        if r.key == key:
            return r
    raise ValueError(f"reading must be one of {', '.join(repr(r.key) for r in READINGS)}, "
                     f"got reading={key!r}")


def _check(rd: Reading, n: int, rate: float, epsilon: float) -> tuple[int, float, float]:
    from audit._validate import check_epsilon, check_positive_int, check_probability

    if not isinstance(rd, Reading):
        raise ValueError(f"reading must be a Reading (see READINGS), got reading={rd!r}")
    return (check_positive_int(n, "n"), check_probability(rate, "rate"),
            check_epsilon(epsilon, "epsilon", allow_zero=False))


def noise_scale(rd: Reading, n: int, epsilon: float) -> float:
    """The Laplace scale: width/ε for a sum, width/(nε) for the mean (calibrated to n)."""
    n, _, epsilon = _check(rd, n, 0.0, epsilon)
    return rd.width / (n * epsilon if rd.mean else epsilon)


def query_value(rd: Reading, datasets):
    """The released statistic before noise, per dataset of a stack (m, n, 1), NaN = missing.

    Values are clipped to [lo, hi] (NaN stays NaN); a sum reads NaN as 0; the mean averages
    the observed entries and is the range's centre when none is observed.
    """
    import numpy as np

    x = np.asarray(datasets, dtype=np.float64)
    if x.ndim != 3 or x.shape[2] != 1:
        raise ValueError(f"datasets must have shape (m, n, 1), got shape {x.shape}")
    x = np.clip(x[:, :, 0], rd.lo, rd.hi)
    if not rd.mean:
        return np.nan_to_num(x, nan=0.0).sum(axis=1)
    k = (~np.isnan(x)).sum(axis=1)
    total = np.nansum(x, axis=1)
    return np.where(k > 0, total / np.maximum(k, 1), rd.centre)


def implementation(rd: Reading, n: int = N_RECORDS, epsilon: float = EPSILON):
    """The release of reading ``rd`` in plain numpy, as a black box with a batched form:
    :func:`query_value` plus Laplace(:func:`noise_scale`) noise, claiming ε."""
    from audit.model.implementation import CallableImplementation, Claim

    scale = noise_scale(rd, n, epsilon)

    def batch(datasets, rng):
        f = query_value(rd, datasets)
        return f + rng.laplace(0.0, scale, size=f.shape[0])

    claim = Claim(epsilon, 0.0, f"{rd.key} reading, Laplace scale {scale:g}")
    return CallableImplementation(lambda data, rng: batch(data[None], rng)[0], claim,
                                  f"na-{rd.key}", batch_func=batch)


def pair(rd: Reading, n: int = N_RECORDS, others: float | None = None) -> tuple[list, list]:
    """The audited pair (z, z′): record 1 at lo against hi, the others at ``others``
    (default ``rd.others``)."""
    n, _, _ = _check(rd, n, 0.0, 1.0)
    c = rd.others if others is None else float(others)
    if not rd.lo <= c <= rd.hi:
        raise ValueError(f"others must be in [{rd.lo}, {rd.hi}], got others={others!r}")
    rest = [[c]] * (n - 1)
    return [[rd.lo]] + rest, [[rd.hi]] + rest


def pair_mixtures(rd: Reading, n: int, rate: float, epsilon: float,
                  others: float | None = None):
    """The output laws (P, Q) of :func:`pair` as Laplace mixtures over record 1's mask and
    the number K ~ Binomial(n − 1, 1 − rate) of other records observed (the others share one
    value, so which of them are observed does not matter)."""
    import numpy as np

    from audit.mixture import Mixture

    n, rate, epsilon = _check(rd, n, rate, epsilon)
    z, zp = (np.asarray(a, dtype=np.float64) for a in pair(rd, n, others))
    q = 1.0 - rate
    weights, data, data_p = [], [], []
    for j in range(n):  # j other records observed
        w = math.comb(n - 1, j) * q**j * rate ** (n - 1 - j)
        for first_observed, w1 in ((True, q), (False, rate)):
            mask = np.array([not first_observed] + [i >= j for i in range(n - 1)])
            weights.append(w1 * w)
            data.append(np.where(mask[:, None], np.nan, z))
            data_p.append(np.where(mask[:, None], np.nan, zp))
    b = noise_scale(rd, n, epsilon)
    return (Mixture(weights, query_value(rd, np.stack(data)), "laplace", b),
            Mixture(weights, query_value(rd, np.stack(data_p)), "laplace", b))


def exact_epsilon(rd: Reading, n: int, rate: float, epsilon: float,
                  others: float | None = None) -> tuple[float, float]:
    """(ε_pair, its numerical error) of :func:`pair` at δ = 0, by the exact integrator."""
    from audit.theory.pair import pair_epsilon

    v = pair_epsilon(*pair_mixtures(rd, n, rate, epsilon, others), 0.0)
    return float(v.value), float(v.error)


def zero_fill_epsilon(position: float, rate: float, epsilon: float) -> float:
    """The exact ε of a Laplace(width/ε) sum that reads NA as 0, 0 at the fraction
    ``position`` of the data's range, every record missing with probability ``rate``
    (MCAR iid, d = 1): ln((π + q e^{sε}) / (π + q e^{−(1−s)ε})), s = max(t, 1 − t), q = 1 − π.

    Parameters
    ----------
    position : float
        t ∈ [0, 1]: 0 or 1 an endpoint, 1/2 the midpoint.
    rate : float
        π ∈ [0, 1].
    epsilon : float
        ε > 0 of the calibration.

    Returns
    -------
    float
        The supremum over all substitution pairs (derivation in the module docstring).

    Examples
    --------
    >>> round(zero_fill_epsilon(0.0, 0.5, 1.0), 6) == round(math.log1p(0.5 * math.expm1(1)), 6)
    True
    """
    from audit._numeric import log1p_c_expm1
    from audit._validate import check_epsilon, check_probability

    t = check_probability(position, "position")
    q = 1.0 - check_probability(rate, "rate")
    e = check_epsilon(epsilon, "epsilon", allow_zero=False)
    s = max(t, 1.0 - t)
    return log1p_c_expm1(s * e, q) - log1p_c_expm1(-(1.0 - s) * e, q)


def _position(rd: Reading) -> float:
    return -rd.lo / rd.width


def _audit(rd: Reading, rate: float, trials: int, seed: int, jobs: int, progress: bool):
    from audit.pipeline.runner import run_audit

    z, zp = pair(rd)
    doc = {"scenario": {"mechanism": "laplace", "epsilon": EPSILON,
                        "query": "bounded-mean" if rd.mean else "sum", "d": 1,
                        "bound": max(abs(rd.lo), abs(rd.hi))},
           "pair": {"z": z, "z_prime": zp},
           "missingness": {"kind": "mcar-iid", "rate": rate},
           "audit": {"trials": trials, "seed": seed, "mode": "fixed", "jobs": jobs}}
    cfg = config(doc, f"{NAME}[{rd.key}, π={rate:g}]")
    return run_audit(cfg, implementation=implementation(rd), progress=progress)


def _others_max(rd: Reading, rate: float) -> float:
    import numpy as np

    return max(exact_epsilon(rd, N_RECORDS, rate, EPSILON, c)[0]
               for c in np.linspace(rd.lo, rd.hi, OTHERS_GRID))


def _refuted(res) -> tuple[bool, bool]:
    """(claim refuted, claim amplified by Theorem 3.2 refuted) at the audit's confidence."""
    from audit.enums import CeilingKind

    kinds = {v.kind for v in res.violations}
    claim = CeilingKind.CLAIM in kinds
    return bool(claim), bool(claim or CeilingKind.AMPLIFIED_CLAIM in kinds)


def run(size: str = "default", seed: int = 9, jobs: int = 1, progress: bool = False) -> dict:
    from audit.theory import accountant as acc

    check_size(size)
    rows = []
    for i, (rd, rate) in enumerate((rd, rate) for rd in READINGS for rate in RATES):
        res = _audit(rd, rate, TRIALS[size], seed + i, jobs, progress)
        eps_pair, err = exact_epsilon(rd, N_RECORDS, rate, EPSILON)
        p_star = acc.p_star_mcar_iid(rate, 1)
        claim, amplified = _refuted(res)
        rows.append({
            **res.to_dict(), "reading": rd.key, "rate": rate, "eps_pair": eps_pair,
            "eps_pair_error": err, "eps_exact": eps_pair, "claim_refuted": claim,
            "amplified_refuted": amplified,
            "eps_closed_form": None if rd.mean else zero_fill_epsilon(_position(rd), rate,
                                                                      EPSILON),
            "eps_pair_common_others_max": _others_max(rd, rate) if rd.mean else None,
            "thm_4_5": acc.laplace_fwl_bound(EPSILON, p_star, 1.0),
            "thm_4_5_applies": not rd.mean,
        })
    return record(NAME, TITLE, size, seed, epsilon=EPSILON, n=N_RECORDS, bound=BOUND,
                  rows=rows, findings=findings(rows))


# --- findings ------------------------------------------------------------------------------

def _by(rows: list[dict], key: str) -> list[dict]:
    return sorted((r for r in rows if r["reading"] == key), key=lambda r: r["rate"])


def _values(rs: list[dict], key: str, digits: int = 3) -> str:
    return ", ".join(f"{r[key]:.{digits}f}" for r in rs)


def _ordering_line(mid: list[dict], end: list[dict]) -> str:
    gaps = [(e["rate"], m["eps_pair"] / e["eps_pair"]) for m, e in zip(mid, end, strict=True)
            if e["rate"] > 0]
    worst = min(gaps, key=lambda g: g[1])
    tight = max(abs(e["eps_pair"] - e["thm_4_5"]) for e in end)
    return (f"- **Midpoint < endpoint at every π > 0**: the midpoint's ε_pair is "
            f"{min(g for _, g in gaps):.0%}–{max(g for _, g in gaps):.0%} of the endpoint's "
            f"(lowest at π = {worst[0]:g}). The endpoint meets Theorem 4.5 exactly (largest "
            f"difference {tight:.1e}); the theorem sees only p* = 1 − π (and ρ = 1), so it "
            f"cannot tell the readings apart. At π = 0 (p* = 1) both are "
            f"{mid[0]['eps_pair']:.4f} = ε: the difference vanishes.")


def _audit_line(rows: list[dict]) -> str:
    above = [r for r in rows if r["eps_lower"] > r["eps_pair"] + r["eps_pair_error"]]
    zero = [r for r in rows if r["reading"] != "dropped"]
    share = min(r["eps_lower"] / r["eps_pair"] for r in zero)
    calls = sorted({r["trials"] for r in rows})
    text = (f"- **Audits** ({', '.join(f'{c:,}' for c in calls)} calls per side, black box): ")
    if above:
        text += ("ε_lower EXCEEDS ε_pair at " + ", ".join(
            f"{r['reading']} π = {r['rate']:g}" for r in above)
                 + " (the audit or the derivation is wrong)")
    else:
        text += "every ε_lower lies below its ε_pair"
    return text + (f"; for the zero-fill sums ε_lower reaches at least {share:.0%} of ε_pair "
                   f"(the supremum is a tail ratio, constant beyond the range's ends, so a "
                   f"region there sees it).")


def _dropped_line(drop: list[dict]) -> list[str]:
    over_thm = [r for r in drop if r["eps_lower"] > r["thm_4_5"]]
    over_claim = [r for r in drop if r["eps_lower"] > r["eps_claim"]]
    worst_ok = all(abs(r["eps_pair"] - r["eps_pair_common_others_max"]) <= 1e-9 * (
        1 + r["eps_pair"]) for r in drop)
    text = (f"- **Dropped (mean of the observed entries, noise for n = {N_RECORDS})**: "
            f"ε_pair = {_values(drop, 'eps_pair')} at π = "
            + ", ".join(f"{r['rate']:g}" for r in drop)
            + " (pair z₁ = −B vs +B, the others at +B: "
            + ("the worst of the pairs whose others share one value on the grid"
               if worst_ok else "NOT the worst of the grid of common values")
            + f"); ε_lower = {_values(drop, 'eps_lower')}. ")
    if over_thm:
        text += ("ε_lower exceeds Theorem 4.5 at π = "
                 + ", ".join(f"{r['rate']:g}" for r in over_thm))
        text += (" and the claimed ε = 1 at π = " + ", ".join(f"{r['rate']:g}"
                                                          for r in over_claim)
                 if over_claim else ", not the claimed ε = 1")
        text += "; "
    big = [r for r in drop if r["eps_pair"] > 2 * r["eps_claim"]]
    alone = ", ".join(f"{(1 - r['rate']) * r['rate'] ** (N_RECORDS - 1):.1g} at π = "
                      f"{r['rate']:g}" for r in big)
    text += ("the theorem does not apply: the denominator k moves with the mask, so a "
             "changed entry moves the mean by 2B/k, not the 2B/n the noise is calibrated for.")
    if big:
        text += (" Where ε_pair is large (π = " + ", ".join(f"{r['rate']:g}" for r in big)
                 + ") it comes from masks that leave few other entries observed (record 1 "
                 f"observed alone has probability qπ^{N_RECORDS - 1}: {alone}), so ε_lower "
                 "nears ε_pair only where those masks are common.")
    return [text,
            "- For a **sum**, dropping a missing value is reading it as 0: the dropped sum is "
            "the midpoint or the endpoint reading, wherever 0 lies in the data's range."]


def findings(rows: list[dict]) -> list[str]:
    """The findings, from the rows (markdown lines for REPORT.md)."""
    mid, end, drop = (_by(rows, r.key) for r in READINGS)
    lines = [
        "- **Exact ε of the zero-fill sums** (worst pair over all substitution pairs; derived "
        "in `experiments/na_position.py`), q = 1 − π: midpoint ln((π + q e^{ε/2}) / "
        "(π + q e^{−ε/2})), endpoint ln(π + q e^ε) = ln(1 + p*(e^ε − 1)), Theorem 4.5 at "
        "d = 1. In general, with 0 at the fraction t of the range and s = max(t, 1 − t), "
        "ln((π + q e^{sε}) / (π + q e^{−(1−s)ε})), increasing in s.",
        "",
        "| π | p* | Theorem 4.5 | midpoint ε_pair | ε_lower | endpoint ε_pair | ε_lower | "
        "dropped ε_pair | ε_lower |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m, e, d in zip(mid, end, drop, strict=True):
        lines.append(f"| {m['rate']:g} | {m['p_star']:.1f} | {m['thm_4_5']:.4f} | "
                     f"{m['eps_pair']:.4f} | {m['eps_lower']:.4f} | {e['eps_pair']:.4f} | "
                     f"{e['eps_lower']:.4f} | {d['eps_pair']:.4f} | {d['eps_lower']:.4f} |")
    closed = max(abs(r["eps_pair"] - r["eps_closed_form"]) for r in (*mid, *end))
    lines += ["", f"  The closed forms and the exact integrator agree to {closed:.1e}.",
              _ordering_line(mid, end), *_dropped_line(drop), _audit_line(rows)]
    return lines


# --- figure --------------------------------------------------------------------------------

def _plot_reading(ax, rows: list[dict], key: str, *, log: bool) -> None:
    import numpy as np

    rs = _by(rows, key)
    x = column(rs, "rate")
    label = reading(key).label
    pair_y, lower = column(rs, "eps_pair"), column(rs, "eps_lower")
    if log:
        lower = np.where(lower > 0, lower, np.nan)
    wide = {"lw": 3.2, "alpha": 0.55} if key == "endpoint" else {"lw": 1.4}
    ax.plot(x, pair_y, color=COLOURS[key], marker="s", ms=7, mfc="none", mew=1.3, zorder=3,
            label=f"ε_pair, {key} ({label})", **wide)
    ax.plot(x, lower, ls="none", marker="o", ms=5, color=COLOURS[key], mec="k", mew=0.6,
            zorder=5, label=f"ε_lower (95 %), {key}")


def draw(doc: dict, fig) -> None:
    rows = doc["rows"]
    fig.set_size_inches(11, 5.2)
    ax_sum, ax_all = fig.subplots(1, 2)
    thm = _by(rows, "midpoint")
    x = column(thm, "rate")
    for ax, keys, log in ((ax_sum, ("midpoint", "endpoint"), False),
                          (ax_all, ("midpoint", "endpoint", "dropped"), True)):
        for key in keys:
            _plot_reading(ax, rows, key, log=log)
        ax.plot(x, column(thm, "thm_4_5"), color="k", ls="--", lw=1.4, zorder=4,
                label=_THM_LABEL)
        ax.set_xlabel("missing rate π (MCAR iid), p* = 1 − π")
        ax.set_xticks(x)
        ax.set_xticklabels([f"{v:g}" for v in x])
        ax.grid(alpha=0.3)
    ax_all.axhline(doc["epsilon"], color="0.5", ls=":", lw=1.4, zorder=2,
                   label=f"claimed ε = {doc['epsilon']:g}")
    ax_sum.set_ylim(0, 1.08 * max(column(rows, "thm_4_5")))
    ax_sum.set_ylabel("ε")
    ax_sum.set_title("Sum, NA read as 0: midpoint against endpoint of the range", fontsize=10)
    ax_all.set_yscale("log")
    ax_all.set_ylabel("ε (log scale)")
    ax_all.set_title("With the dropped reading (mean of the observed entries), log scale",
                     fontsize=10)
    _legend(fig)


def _legend(fig) -> None:
    """The figure's legend below the panels, one column per reading (Theorem 4.5 and the
    claim under the zero-fill readings)."""
    handles = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    keys = [lab for lab in handles if lab.startswith("ε_")]
    order = [*keys[:2], _THM_LABEL, *keys[2:4],
             *[lab for lab in handles if lab.startswith("claimed")], *keys[4:]]
    fig.legend([handles[lab] for lab in order], order, loc="outside lower center", ncol=3,
               fontsize=8, frameon=False)
