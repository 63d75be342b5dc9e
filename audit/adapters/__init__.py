"""Adapters: real DP libraries, and a user's own mechanism, as black-box implementations.

adapters layer: imports the shared vocabulary and ``audit.model`` only. Each library has one
small module, importing its library lazily (inside functions), so that this package and every
adapter module import without the libraries installed; each module's docstring states exactly
what a NaN does to its library's release, with source citations, and its ``ADAPTER``
(:class:`~audit.adapters.protocol.Adapter`) declares the library, its targets and their
parameters, the library's neighbouring relation, each target's NaN semantics and the example
parameters that tests, benchmark and experiments use. Adapters are found through the
``audit.adapters`` entry-point group (:mod:`audit.adapters.registry`).

``make_implementation("<library>:<function>", epsilon=..., delta=..., params={...})`` builds an
:class:`audit.model.implementation.Implementation`; ``"package.module:function"`` names a
user's own callable ``f(data, rng, **params)`` instead, whose claim is (epsilon, delta) as
given (a ``batch`` attribute on it, ``f.batch(datasets, rng, **params)``, is used as the
batched form; ``f.batch_in_one_call = True`` states that it makes its releases in one library
call, whose independence an audit then checks: :mod:`audit.model.batch_check`).
``available_targets()`` lists the library targets; ``seedable(target)`` says
whether the same ``rng`` seed reproduces a target's releases.

Every adapter's claim is for the audit's neighbouring relation, the substitution of one
record (a row of the (n, d) array): each adapter calibrates its library, by the library's own
stated guarantee and neighbouring relation, so that this holds for the (ε, δ) asked for,
through the one conversion :func:`audit.adapters.relations.to_substitution`.

Install the libraries with the ``libraries`` extra: ``pip install -e ".[libraries]"``. A library
that cannot be installed beside the auditor (SmartNoise SQL) is an isolated target: its adapter
declares its own environment, built once and cached, and the library runs in a worker process
there (:mod:`audit.adapters.isolation`; ``python -m audit env`` manages the environments).
"""

from __future__ import annotations

import inspect

from audit._validate import check_delta, check_positive
from audit.adapters.protocol import (
    REQUIRED,
    Adapter,
    Example,
    LibraryDefect,
    NanSemantics,
    Parameter,
    Target,
)
from audit.adapters.registry import (
    ENTRY_POINT_GROUP,
    adapters,
    examples,
    get_adapter,
    library_names,
)
from audit.adapters.relations import LibraryBudget, Relation, to_substitution
from audit.model.implementation import CallableImplementation, Claim, load_callable
from audit.records import traits_of

__all__ = [
    "make_implementation", "available_targets", "seedable", "example",
    "Adapter", "Target", "Parameter", "Example", "NanSemantics", "REQUIRED", "LibraryDefect",
    "Relation", "LibraryBudget", "to_substitution",
    "ENTRY_POINT_GROUP", "adapters", "get_adapter", "library_names", "examples",
]


def available_targets() -> dict[str, list[str]]:
    """Library name -> the functions its adapter offers (whether or not it is installed)."""
    return {lib: list(a.functions) for lib, a in adapters().items()}


def _split(target: object) -> tuple[str, str]:
    head, sep, tail = str(target).partition(":")
    if not isinstance(target, str) or not sep or not head or not tail:
        raise ValueError(f"target must look like '<library>:<function>' (libraries: "
                         f"{', '.join(library_names())}) or 'package.module:function', got "
                         f"target={target!r}")
    return head, tail


def seedable(target: str, params: dict | None = None) -> bool:
    """Whether the same ``rng`` seed reproduces the releases of ``target`` made with
    ``params`` (a seedable adapter may hand some releases to a library's own generator:
    ``Adapter.unseeded``).

    A user's callable is taken to be seedable (it is given the ``rng``).
    """
    library, function = _split(target)
    if library not in library_names():
        return True
    adapter = get_adapter(library)
    adapter.target(function)
    return adapter.seeded(params)


def example(target: str, name: str) -> Example:
    """The example ``name`` of the library target ``target`` (``"opendp:sum"``).

    Raises
    ------
    ValueError
        An unknown library, function or example (the message lists those available).
    """
    library, function = _split(target)
    return get_adapter(library).target(function).example(name)


def _user_callable(target: str, epsilon: float, delta: float,
                   params: dict) -> CallableImplementation:
    library, _ = _split(target)
    try:
        func = load_callable(target)
    except ValueError as exc:
        if "." not in library:
            raise ValueError(f"unknown library {library!r} in target {target!r}; available: "
                             f"{', '.join(library_names())} (the adapters registered under "
                             f"the entry-point group {ENTRY_POINT_GROUP!r}), or "
                             f"'package.module:function' for your own callable ({exc})"
                             ) from None
        raise
    if not callable(func):
        raise ValueError(f"target {target!r} is not callable")
    try:
        inspect.signature(func).bind(None, None, **params)
    except TypeError as exc:
        raise ValueError(f"{target}: params do not fit its signature f(data, rng, **params): "
                         f"{exc}") from None
    except ValueError:  # pragma: no cover - no signature (a builtin): let the call decide
        pass
    traits = traits_of(func)
    batch = traits.batch

    def release(data, rng):
        return func(data, rng, **params)

    batch_func = None
    if callable(batch):
        def batch_func(datasets, rng):
            return batch(datasets, rng, **params)

    return CallableImplementation(
        func=release, claim=Claim(epsilon, delta, f"user callable {target} (claim as given)"),
        name=target, batch_func=batch_func, params=dict(params),
        batch_in_one_call=batch_func is not None and traits.batch_in_one_call)


def make_implementation(target: str, *, epsilon: float, delta: float = 0.0,
                        params: dict | None = None) -> CallableImplementation:
    """The implementation named by ``target``, claiming (ε, δ) per substituted record.

    Parameters
    ----------
    target : str
        ``"<library>:<function>"`` (see :func:`available_targets`) or
        ``"package.module:function"`` for a user's callable ``f(data, rng, **params)``.
    epsilon : float
        ε > 0.
    delta : float
        δ ∈ [0, 1): 0 for Laplace/pure-ε targets, > 0 for Gaussian ones.
    params : dict, optional
        The target's parameters (its adapter's ``Target.parameters``; each adapter module
        documents them).

    Raises
    ------
    ValueError
        Unknown library or function (the message lists those available and names the
        entry-point group), a library that is not installed (the message names the extra to
        install), a bad parameter (the message names it), or an isolated library whose
        environment or worker cannot be set up (its Python version missing, a build
        failing: one line).

    Examples
    --------
    >>> impl = make_implementation("tests.adapters.example_mechanisms:noisy_sum",
    ...                            epsilon=1.0, params={"bound": 1.0, "scale": 6.0})
    >>> impl.claim.epsilon, impl.name
    (1.0, 'tests.adapters.example_mechanisms:noisy_sum')
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_delta(delta, "delta")
    if delta >= 1.0:
        raise ValueError(f"delta must be in [0, 1), got delta={delta!r}")
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"params must be a dict, got params={params!r}")
    library, function = _split(target)
    if library not in library_names():
        return _user_callable(target, epsilon, delta, params or {})
    adapter = get_adapter(library)
    adapter.target(function)
    return adapter.make(function, epsilon=epsilon, delta=delta, params=params)
