"""Empirical privacy auditing of DP releases under missing data.

The package is layered (docs/DESIGN.md): ``audit.theory`` (closed forms and certified
numerics), ``audit.model`` (missingness, queries, releases, neighbouring pairs),
``audit.simulation`` (numba streams, kernels, engine), ``audit.estimation`` (counts → valid
bounds), ``audit.pipeline`` (config, plan, runner, results) and ``audit.cli``, over a small
shared vocabulary (``audit.enums``, ``audit.protocols``, ``audit.statistics``,
``audit.mixture``).

The names below are exported lazily: ``from audit import accountant as acc`` or
``from audit import run_audit`` imports only what it needs, so ``python -m audit bound``
starts without numba and a kernel compiles only when a run needs it.
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0"

# name -> (module, attribute or None for the module itself)
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "accountant": ("audit.theory.accountant", None),
    "tradeoff": ("audit.theory.tradeoff", None),
    "pair": ("audit.theory.pair", None),
    "calibration": ("audit.theory.calibration", None),
    "fwl": ("audit.theory.fwl", None),
    "engine": ("audit.simulation.engine", None),
    "estimation": ("audit.estimation", None),
    "Mixture": ("audit.mixture", "Mixture"),
    "NoiseKind": ("audit.enums", "NoiseKind"),
    "MissingnessClass": ("audit.enums", "MissingnessClass"),
    "Statistic": ("audit.statistics", "Statistic"),
    "make_missingness": ("audit.model.missingness", "make_missingness"),
    "make_query": ("audit.model.queries", "make_query"),
    "Release": ("audit.model.release", "Release"),
    "worst_case_pair": ("audit.model.neighbours", "worst_case_pair"),
    "load_config": ("audit.pipeline.config", "load_config"),
    "config_from_dict": ("audit.pipeline.config", "config_from_dict"),
    "plan_audit": ("audit.pipeline.plan", "plan_audit"),
    "run_audit": ("audit.pipeline.runner", "run_audit"),
    "run_tradeoff_audit": ("audit.pipeline.runner", "run_tradeoff_audit"),
    "AuditResult": ("audit.pipeline.results", "AuditResult"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'audit' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
