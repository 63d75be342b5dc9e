"""Implementations audited as black boxes: a DP library's release or a user's own mechanism.

An implementation is a Python callable that takes one dataset — a 2-D float array of shape
(n, d), NaN marking a missing entry — and a ``numpy.random.Generator``, and returns a scalar
or a vector. Optionally it has a batched form taking a stack of datasets (m, n, d) and
returning m outputs, for speed. The framework owns everything around it: the neighbouring
pair, the missingness mechanism applied to every record before each call, the pilot and main
runs, the attack, the region and the bound.

An implementation states what it claims (:class:`Claim`: (ε, δ) on complete data); the audit
says whether the claim, and the claim amplified by the missingness mechanism where [RPS]
Theorem 3.2 applies, survive.

:class:`ReferenceImplementation` is the plain-numpy A of this project's own queries (NA read
as 0, Laplace or Gaussian noise), so the black-box path can be checked against the white-box
engine on identical settings.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from audit.interfaces import Implementation
from audit.model.release import Release
from audit.records import Claim

if TYPE_CHECKING:  # annotations only: adapters import this module without scipy
    from audit.protocols import Query

__all__ = [
    "Claim",
    "Implementation",
    "CallableImplementation",
    "ReferenceImplementation",
    "load_callable",
]


@dataclass(frozen=True, eq=False)
class CallableImplementation:
    """An implementation from plain callables.

    Parameters
    ----------
    func : callable
        ``func(data, rng)`` → scalar or 1-D array.
    claim : Claim
    name : str
    batch_func : callable, optional
        ``batch_func(datasets, rng)`` → array (m,) or (m, dim).
    batch_in_one_call : bool
        True when ``batch_func`` makes several releases in one call of a library (public
        partitions or keys, one dataset each) rather than one call per dataset: their
        independence is then checked, not assumed, before an audit uses the batched form
        (:mod:`audit.model.batch_check`).
    params : dict
        The parameters, for the checkpoints' digest and reports.
    """

    func: Callable
    claim: Claim
    name: str = "implementation"
    batch_func: Callable | None = None
    params: dict = field(default_factory=dict)
    batch_in_one_call: bool = False

    def __post_init__(self) -> None:
        if not callable(self.func):
            raise ValueError(f"func must be callable, got func={self.func!r}")
        if self.batch_func is not None and not callable(self.batch_func):
            raise ValueError(f"batch_func must be callable, got batch_func={self.batch_func!r}")
        if not isinstance(self.claim, Claim):
            raise ValueError(f"claim must be an audit.model.implementation.Claim, got "
                             f"claim={self.claim!r}")

    def __call__(self, data: np.ndarray, rng: np.random.Generator):
        return self.func(data, rng)

    @property
    def batch(self) -> Callable | None:
        return self.batch_func


@dataclass(frozen=True, eq=False)
class ReferenceImplementation:
    """A of this project's model in plain numpy: f(data with NA read as 0) + noise.

    Parameters
    ----------
    query : Query
        A catalogue query (``audit.model.queries``) or any :class:`audit.protocols.Query`.
    release : Release
        Noise kind and scale.
    claim : Claim
        The (ε, δ) the release is calibrated for.
    """

    query: Query
    release: Release
    claim: Claim
    name: str = "reference"

    def __call__(self, data: np.ndarray, rng: np.random.Generator):
        return self.batch(np.asarray(data, dtype=np.float64)[None], rng)[0]

    def batch(self, datasets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = np.nan_to_num(np.asarray(datasets, dtype=np.float64), nan=0.0)
        m, n, d = x.shape
        f = self.query.contributions(x.reshape(m * n, d), n).reshape(m, n, -1).sum(axis=1)
        f = f + self.release.additive_noise.sample(rng, self.release.scale, f.shape)
        return f[:, 0] if f.shape[1] == 1 else f


def load_callable(target: str) -> Callable:
    """The object named ``"package.module:attribute"`` (a user's own mechanism).

    Raises
    ------
    ValueError
        If the string is malformed, the module cannot be imported or has no such attribute.
    """
    module_name, sep, attr = str(target).partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"target must look like 'package.module:function', got "
                         f"target={target!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"target {target!r}: cannot import {module_name!r} ({exc})") from None
    except SyntaxError as exc:
        raise ValueError(f"target {target!r}: {module_name!r} has a syntax error "
                         f"({exc.filename}, line {exc.lineno}: {exc.msg})") from None
    except (Exception, SystemExit) as exc:  # the module's own code failed at import
        raise ValueError(f"target {target!r}: importing {module_name!r} raised "
                         f"{type(exc).__name__}: {exc}") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"target {target!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj
