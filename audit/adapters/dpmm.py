"""dpmm (``dpmm`` 0.1.9, "differentially private marginal models") MST and PrivBayes synthetic
data of one column with NaNs, as isolated black-box implementations.

**Isolated.** dpmm 0.1.9 needs Python < 3.12, ``numpy==1.26.4``, ``opendp==0.12.1``,
``pandas==2.1.0`` and ``scikit-learn==1.5.0``; the auditor runs numpy 2, so it cannot be
installed beside it. ``ADAPTER`` declares its own environment (:data:`ENVIRONMENT`: the pins
below, on Python 3.11), built once on first use or by ``python -m audit env build dpmm``; the
library runs in a worker there, which imports only ``audit/adapters/isolation/dpmm_side.py``.

Targets: ``dpmm:mst`` (``MSTPipeline``) and ``dpmm:privbayes`` (``PrivBayesPipeline``).
``AIMPipeline`` is not offered: on a one-column table it fails inside dpmm whatever the data
(``KeyError`` in its domain compression, models/base/compression.py:96, or, with
``compress=False``, ``max() arg is an empty sequence``: AIM's candidates are pairs of columns).
Parameters:

``bounds`` (required)
    (lo, hi): the column's domain, handed as dpmm's README does, ``fit(df, domain={"x":
    {"lower": lo, "upper": hi}})``.
``column`` (default 0)
    The dataset column that fills the table's one column ``x`` (one row per record).
``companion`` (default None)
    A second dataset column that fills a second table column ``y`` (same bounds), modelled
    by dpmm beside ``x`` and never released: with it, a constant ``x`` leaves dpmm a column
    to model (on ``x`` alone a constant table fails, below), so that dpmm's copy of a
    constant column into every synthetic row is seen (the NaN table's finding
    ``dpmm:constant-column``, ``experiments/nan_findings.py``). None: the table is ``x``.
``rows`` (default :data:`ROWS`)
    Synthetic rows generated per release (``generate(n_records=rows)``).
``n_bins`` (default :data:`N_BINS`)
    Uniform bins of ``[lo, hi]`` (dpmm's ``n_bins``).
``n_iters`` (default :data:`N_ITERS`)
    Private-PGM's mirror-descent iterations (``gen_kwargs={"n_iters": ...}``; dpmm's default
    5,000 costs 2.3 s a release on one core). They post-process the noisy measurements
    (models/base/mechanisms/mechanism.py:146-147), so they change the synthetic data's
    quality, not the privacy claim.

**Release.** A release is one fitted pipeline and one synthetic table of ``rows`` rows; the
adapter releases two statistics of its column (post-processing, so the claim stands for
them): the fraction of NaN rows, and the mean of the other rows (the midpoint of the bounds
when every row is NaN). The first sees the NaN-indicator column dpmm adds, the second the
numeric column, or the static value dpmm copies (below). About 50 ms a release on one core
at the defaults (MST and PrivBayes alike; most of it the 100 mirror-descent iterations).

**Binning.** ``proc_epsilon=None``: dpmm's uniform binner (pipelines/base.py:229-233), its
bounds the domain's ``lower`` and ``upper`` (``Binner.get_bounds``, processing/binners.py:
171-172): the bins are a function of the public domain and spend no budget, which all goes
to the generator. Without a domain dpmm reads the column's own minimum and maximum
(binners.py:173-178: not private), or, with a ``proc_epsilon``, estimates them with Laplace
noise (binners.py:179-180, ``approx_bounds``, processing/utils.py:23-92) and spends that ε
on top of the generator's; dpmm's default binner, PrivTree, spends ``proc_epsilon`` more on
its noisy splits (binners.py:611-620). Neither is used here.

**Claim.** dpmm's ``epsilon`` and ``delta`` are the generator's (ε, δ)-DP budget, turned into
zCDP by ``cdp_rho(epsilon, delta)`` (the smallest ρ whose ρ-zCDP implies (ε, δ)-DP,
models/base/mechanisms/cdp2adp.py:110-122): MST spends ρ/3 on the one-way marginals, ρ/3 on
the selection of pairs and ρ/3 on their marginals (models/mst.py:118-119, 145), Gaussian noise
of σ = √(3/(2ρ)) per unit-sensitivity marginal; PrivBayes ρ for (ε/2, δ) on its marginals
and ε/2 on the exponential mechanism choosing them (models/priv_bayes.py:221, 261). The
sensitivities are those of one row added or removed (one cell of each marginal moves by 1;
dpmm does not name a relation, its MST and AIM follow private-pgm, whose papers state
add/remove): ``Relation.ADD_REMOVE``. One record is one row, so the adapter hands dpmm
(ε/2, δ/(1 + e^{ε/2})) (``to_substitution``). ``delta`` must be in (0, 1): with δ = 0 dpmm
sets ρ = 0 (mechanism.py:44) and its noise scale is infinite or undefined.

**Randomness.** Not seedable (``ADAPTER.seedable`` is False): the measurements' Gaussian noise
is OpenDP's ``make_gaussian`` (models/base/utils.py:7-19), drawn from OpenDP's CSPRNG. The
worker's seed seeds dpmm's own ``random_state`` (the fill value, the choice of cliques and the
sampling of the synthetic rows: pipelines/base.py:35-51), not the noise.

**What a NaN does** (dpmm 0.1.9, ``dpmm/``; dpmm's README: "missing values are supported and
will be reproduced accordingly if present in any column within the real data"):

* ``TableBinner.fit`` (processing/table_binner.py:212-228): a column with **both** NaN and
  non-NaN values gets an indicator column ``x_NaN`` (categories False, True), and its NaNs are
  filled with one of its non-NaN values, drawn from the data (``sample(n=1)``). A column
  without NaN gets no indicator.
* Static columns (table_binner.py:230-237): a column with one value (``nunique(dropna=False)
  == 1``, after the fill) is dropped from the model and its value is copied into every
  synthetic row (``inverse_transform``, table_binner.py:433-435), exactly, without noise. An
  all-NaN column is static: every synthetic row is NaN.
* ``inverse_transform`` (table_binner.py:437-442) sets the column to NaN in the synthetic rows
  whose generated indicator is True.
* A table whose every column is static (one column all NaN, or constant) leaves the binner
  nothing to encode: ``TableBinner.transform`` fails (``pd.concat`` of no column,
  table_binner.py:327, "No objects to concatenate"): no release.

**The finding.** The output domain depends on the data: a synthetic NaN is possible only when
the input column had a NaN (the indicator exists only then). For the neighbouring pair (no NaN)
vs (one NaN), the event "the synthetic column has a NaN" has probability 0 on the first side
and a positive one on the second: no finite ε bounds it, whatever the noise. With the other
records equal (the NaN table's pair: one record ±B against NA, the others 0), the NaN side's
filled column is static too: its non-NaN synthetic rows are all exactly 0, where the other
side's are drawn from the noisy binned marginal. Both are in dpmm's preprocessing, before any
noise: the targets declare ``NanSemantics.SETS_DOMAIN`` (``sets-domain``), the root cause the
NaN regression table gives their rows.
"""

from __future__ import annotations

from numbers import Integral
from pathlib import Path

from audit.adapters import _common, relations
from audit.adapters.isolation.client import IsolatedImplementation, launch
from audit.adapters.isolation.environments import Environment
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.model.implementation import Claim

LIBRARY = "dpmm"
DISTRIBUTION = "dpmm"
#: the environment dpmm runs in (``pip freeze`` of a fresh ``pip install dpmm==0.1.9`` on
#: Python 3.11, 2026-12-05)
ENVIRONMENT = Environment(LIBRARY, (
    "dpmm==0.1.9", "numpy==1.26.4", "opendp==0.12.1", "pandas==2.1.0",
    "scikit-learn==1.5.0", "scipy==1.17.1", "networkx==2.8.8", "disjoint-set==0.7.4",
    "joblib==1.6.0", "threadpoolctl==3.8.0", "cloudpickle==3.1.3", "Deprecated==1.3.1",
    "wrapt==2.5.2", "python-dateutil==4.0.0", "pytz==2026.6", "tzdata==2026.6",
    "tqdm==4.70.1",
), "3.11")
#: the library-side module the worker loads
SIDE = Path(__file__).resolve().parent / "isolation" / "dpmm_side.py"
#: synthetic rows per release by default
ROWS = 100
#: uniform bins of the domain by default
N_BINS = 8
#: Private-PGM iterations by default (dpmm's own: 5,000)
N_ITERS = 100
#: the largest values accepted (a release's time grows with each)
MAX_ROWS, MAX_BINS, MAX_ITERS = 100_000, 1_000, 100_000
PIPELINES = {"mst": "MSTPipeline", "privbayes": "PrivBayesPipeline"}


def _check_int(target: str, name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or not lo <= value <= hi:
        raise ValueError(f"{target}: parameter {name!r} must be an integer in [{lo}, {hi}], "
                         f"got {name}={value!r}")
    return int(value)


def _check(target: str, function: str, params: dict | None) -> dict:
    """The parameters the worker is handed (without the budget), checked."""
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    lo, hi = _common.check_bounds(target, p["bounds"])
    column = _common.check_one_column(target, p["column"], "the table has one column")
    companion = p["companion"]
    if companion is not None:
        companion = _common.check_one_column(target, companion, "a second table column")
        if companion == column:
            raise ValueError(f"{target}: parameter 'companion' must differ from 'column', got "
                             f"companion={companion}")
    return {"function": function, "bounds": [lo, hi], "column": column, "companion": companion,
            "rows": _check_int(target, "rows", p["rows"], 1, MAX_ROWS),
            "n_bins": _check_int(target, "n_bins", p["n_bins"], 2, MAX_BINS),
            "n_iters": _check_int(target, "n_iters", p["n_iters"], 1, MAX_ITERS)}


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> IsolatedImplementation:
    """dpmm's ``function`` pipeline on one column in its worker (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    lib = _check(target, function, params)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"{target}: dpmm's generators are (ε, δ)-DP through zCDP (ρ = 0 at "
                         f"δ = 0); delta must be in (0, 1), got delta={delta!r}")
    budget = relations.to_substitution(ADAPTER.relation, epsilon, delta, entries=1)
    lib.update(epsilon=budget.epsilon, delta=budget.delta)
    worker, info = launch(ENVIRONMENT, SIDE, lib, name=target)
    note = (f"dpmm {info.get('dpmm')} (opendp {info.get('opendp')}) {PIPELINES[function]}"
            f"(epsilon={budget.epsilon:.6g}, delta={budget.delta:.4g}, proc_epsilon=None, "
            f"n_bins={lib['n_bins']}, n_iters={lib['n_iters']}) on column {lib['column']} "
            f"with domain ({lib['bounds'][0]}, {lib['bounds'][1]}), {lib['rows']} synthetic "
            f"rows; zCDP rho={info.get('rho', float('nan')):.4g}, per row added or removed: "
            f"(ε, δ)-DP per substituted record (see audit.adapters.dpmm for what NaN does)")
    impl = IsolatedImplementation(ENVIRONMENT, str(SIDE), lib, Claim(epsilon, delta, note),
                                  target, info)
    impl.adopt(worker)
    return impl


_PARAMETERS = (
    Parameter("bounds", REQUIRED, "(lo, hi): the column's domain (lower, upper)"),
    Parameter("column", 0, "the dataset column that fills the table"),
    Parameter("companion", None, "a second dataset column, table column y (never released)"),
    Parameter("rows", ROWS, "synthetic rows per release"),
    Parameter("n_bins", N_BINS, "uniform bins of [lo, hi]"),
    Parameter("n_iters", N_ITERS, "Private-PGM iterations (post-processing)"),
)
_DEFAULT = Example("default", {"bounds": [-1.0, 1.0]}, delta=1e-6,
                   doc="one column in [-1, 1]; releases (NaN fraction, mean of the rest) of "
                       "100 synthetic rows")

#: ``Target.source`` (dpmm 0.1.9): the NaN indicator and fill, the static columns, the NaN
#: put back
_TB = "dpmm/processing/table_binner.py"
_SOURCE = f"{_TB}:212-228; {_TB}:230-237; {_TB}:437-442"
_SUMMARY = ("NaN indicator column added only when the column has a NaN (synthetic NaN only "
            "then); NaNs filled from the data; a one-valued column copied exactly")

ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="dpmm", seedable=False,
    relation=Relation.ADD_REMOVE, make=make, environment=ENVIRONMENT,
    summary="dpmm 0.1 MST and PrivBayes synthetic data (zCDP, per row added or removed), "
            "isolated",
    targets=(
        Target("mst", _PARAMETERS, nan=NanSemantics.SETS_DOMAIN, summary=_SUMMARY,
               source=_SOURCE, examples=(_DEFAULT,)),
        Target("privbayes", _PARAMETERS, nan=NanSemantics.SETS_DOMAIN, summary=_SUMMARY,
               source=_SOURCE, examples=(_DEFAULT,)),
    ),
)
