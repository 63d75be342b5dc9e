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
from typing import TYPE_CHECKING

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
    # subjects: what an audit audits, and the one factory
    "Subject": ("audit.pipeline.subject", "Subject"),
    "make_subject": ("audit.pipeline.factory", "make_subject"),
    "ModelSubject": ("audit.pipeline.model_subject", "ModelSubject"),
    "ImplementationSubject": ("audit.pipeline.implementation", "ImplementationSubject"),
    "plan_implementation_audit": ("audit.pipeline.implementation",
                                  "plan_implementation_audit"),
    # typed bounds, ceilings and violations
    "RegionBound": ("audit.estimation.regions", "RegionBound"),
    "SequentialBound": ("audit.estimation.sequential", "SequentialBound"),
    "Ceiling": ("audit.pipeline.ceilings", "Ceiling"),
    "CeilingKind": ("audit.enums", "CeilingKind"),
    "Violation": ("audit.pipeline.ceilings", "Violation"),
    # implementations audited as black boxes
    "assert_private": ("audit.testing", "assert_private"),
    "make_implementation": ("audit.adapters", "make_implementation"),
    "Claim": ("audit.model.implementation", "Claim"),
    "CallableImplementation": ("audit.model.implementation", "CallableImplementation"),
    "ReferenceImplementation": ("audit.model.implementation", "ReferenceImplementation"),
    # extension surfaces: attacks and the values they exchange
    "BlackBoxAttack": ("audit.protocols", "BlackBoxAttack"),
    "WhiteBoxAttack": ("audit.protocols", "WhiteBoxAttack"),
    "Score": ("audit.protocols", "Score"),
    "Pilot": ("audit.protocols", "Pilot"),
    "Laws": ("audit.protocols", "Laws"),
    # extension surfaces: missingness mechanisms, noises, library adapters
    "Mechanism": ("audit.model.missingness", "Mechanism"),
    "IndependentFeatures": ("audit.model.missingness", "IndependentFeatures"),
    "AdditiveNoise": ("audit.noise", "AdditiveNoise"),
    "LaplaceNoise": ("audit.noise", "LaplaceNoise"),
    "GaussianNoise": ("audit.noise", "GaussianNoise"),
    "noise_of": ("audit.noise", "noise_of"),
    "Adapter": ("audit.adapters", "Adapter"),
    "Target": ("audit.adapters", "Target"),
    "Example": ("audit.adapters", "Example"),
    "NanSemantics": ("audit.adapters", "NanSemantics"),
    "Relation": ("audit.adapters", "Relation"),
    "to_substitution": ("audit.adapters", "to_substitution"),
}

if TYPE_CHECKING:  # the lazy exports above, spelled out for type checkers (tested equal)
    from audit import estimation
    from audit.adapters import (
        Adapter,
        Example,
        NanSemantics,
        Relation,
        Target,
        make_implementation,
        to_substitution,
    )
    from audit.enums import CeilingKind, MissingnessClass, NoiseKind
    from audit.estimation.regions import RegionBound
    from audit.estimation.sequential import SequentialBound
    from audit.mixture import Mixture
    from audit.model.implementation import (
        CallableImplementation,
        Claim,
        ReferenceImplementation,
    )
    from audit.model.missingness import IndependentFeatures, Mechanism, make_missingness
    from audit.model.neighbours import worst_case_pair
    from audit.model.queries import make_query
    from audit.model.release import Release
    from audit.noise import AdditiveNoise, GaussianNoise, LaplaceNoise, noise_of
    from audit.pipeline.ceilings import Ceiling, Violation
    from audit.pipeline.config import config_from_dict, load_config
    from audit.pipeline.factory import make_subject
    from audit.pipeline.implementation import ImplementationSubject, plan_implementation_audit
    from audit.pipeline.model_subject import ModelSubject
    from audit.pipeline.plan import plan_audit
    from audit.pipeline.results import AuditResult
    from audit.pipeline.runner import run_audit, run_tradeoff_audit
    from audit.pipeline.subject import Subject
    from audit.protocols import BlackBoxAttack, Laws, Pilot, Score, WhiteBoxAttack
    from audit.simulation import engine
    from audit.statistics import Statistic
    from audit.testing import assert_private
    from audit.theory import accountant, calibration, fwl, pair, tradeoff

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
