"""Where adapters are found: the ``audit.adapters`` entry-point group, like ``audit.attacks``.

A distribution registers an adapter as one line of its ``pyproject.toml``::

    [project.entry-points."audit.adapters"]
    mylib = "mypackage.mylib_adapter:ADAPTER"

the name being the adapter's :attr:`~audit.adapters.protocol.Adapter.library` and the object
an :class:`~audit.adapters.protocol.Adapter`. This package registers its own the same way
(``pyproject.toml``). Installed metadata is only rewritten by an install, so an adapter added
to this package is also found, before the next ``pip install -e .``, as a module of
``audit.adapters`` that defines ``ADAPTER`` (``tests/adapters/test_registry.py`` checks that
every such module has its entry-point line); an entry point of the same name takes precedence.
Entry points are loaded only when their library is asked for, so a broken third-party adapter
fails only its own targets.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib import metadata

from audit._plugins import entry_points_of
from audit.adapters.protocol import Adapter, Example

__all__ = ["ENTRY_POINT_GROUP", "library_names", "get_adapter", "adapters", "examples",
           "pinned_version", "library_version"]

#: the entry-point group adapters are registered under
ENTRY_POINT_GROUP = "audit.adapters"


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return entry_points_of(ENTRY_POINT_GROUP)


def package_adapters() -> dict[str, Adapter]:
    """The adapters this package ships: every module of ``audit.adapters`` (not starting
    with ``_``) that defines an :class:`Adapter` named ``ADAPTER``, by library name."""
    package = importlib.import_module("audit.adapters")
    out = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        adapter = getattr(importlib.import_module(f"audit.adapters.{info.name}"), "ADAPTER",
                          None)
        if isinstance(adapter, Adapter):
            out[adapter.library] = adapter
    return out


def _load(ep: metadata.EntryPoint) -> Adapter:
    where = f"the adapter {ep.name!r} ({ep.value}) of the entry-point group {ENTRY_POINT_GROUP!r}"
    try:
        adapter = ep.load()
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{where} cannot be loaded: {exc}") from None
    if not isinstance(adapter, Adapter):
        raise ValueError(f"{where} must be an audit.adapters.Adapter, got "
                         f"{type(adapter).__name__}")
    if adapter.library != ep.name:
        raise ValueError(f"{where} declares library={adapter.library!r}; the entry point's "
                         f"name and the adapter's library must be the same")
    return adapter


def library_names() -> list[str]:
    """Every library an adapter is registered for, sorted (nothing is loaded)."""
    return sorted(set(_entry_points()) | set(package_adapters()))


def get_adapter(library: str) -> Adapter:
    """The adapter of ``library``.

    Raises
    ------
    ValueError
        No adapter is registered as ``library`` (the message names the entry-point group and
        the libraries that are), or its entry point does not load to an :class:`Adapter` of
        that library.
    """
    eps = _entry_points()
    if library in eps:
        return _load(eps[library])
    own = package_adapters()
    if library in own:
        return own[library]
    known = ", ".join(sorted(set(eps) | set(own))) or "(none)"
    raise ValueError(f"unknown library {library!r}: no adapter is registered under that name "
                     f"in the entry-point group {ENTRY_POINT_GROUP!r} (registered: {known})")


def adapters() -> dict[str, Adapter]:
    """Library name -> adapter, for every registered library (each entry point loaded)."""
    return {name: get_adapter(name) for name in library_names()}


def pinned_version(adapter: Adapter) -> str:
    """The version of an isolated adapter's library pinned in its environment's
    requirements (``"not pinned"`` where none is)."""
    pin = adapter.distribution.lower() + "=="
    requirements = adapter.environment.requirements if adapter.environment else ()
    return next((r[len(pin):] for r in requirements if r.lower().startswith(pin)),
                "not pinned")


def library_version(adapter: Adapter) -> str:
    """The version audited: installed beside the auditor (``"not installed"`` where it is
    not), or, for an isolated library, pinned in its environment (:func:`pinned_version`)."""
    if adapter.isolated:
        return pinned_version(adapter)
    try:
        return metadata.version(adapter.distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def examples(*, isolated: bool = True) -> list[tuple[str, Example]]:
    """(target, example) for every example of every target of every registered adapter, in
    library, then declaration, order: what the contract tests and the benchmark run.
    ``isolated=False`` leaves out the libraries that run in their own environment
    (:attr:`Adapter.isolated`)."""
    return [(f"{a.library}:{t.function}", e) for a in adapters().values()
            if isolated or not a.isolated for t in a.targets for e in t.examples]
