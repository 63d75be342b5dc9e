"""What an adapter declares: its library, targets, parameters, relation, NaN semantics, examples.

An adapter is one module of ``audit.adapters`` (or of any package) that defines ``ADAPTER``, an
:class:`Adapter`, and is registered under the ``audit.adapters`` entry-point group with the
library's name (``diffprivlib = "audit.adapters.diffprivlib:ADAPTER"``). Everything the rest
of the project needs to know about it is read from that one object: the registry
(``audit.adapters.registry``) lists its targets and builds implementations with
:attr:`Adapter.make`; the contract tests, ``benchmarks/bench_adapters.py`` and
``experiments/library_audit.py`` take their parameters from its :class:`Example` s.

Describe only: the dataclasses check their own consistency (an example's parameters are among
those its target accepts, every required one given) and compute nothing else.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from audit._validate import check_bool, check_delta, check_positive, parse_enum
from audit.adapters.isolation.environments import Environment
from audit.adapters.relations import Relation
from audit.enums import Choice

__all__ = ["REQUIRED", "NanSemantics", "Parameter", "Example", "Target", "Adapter",
           "LibraryDefect"]


class _Required:
    """The default of a parameter that has none (a single instance, :data:`REQUIRED`)."""

    def __repr__(self) -> str:
        return "REQUIRED"

    def __reduce__(self):
        return "REQUIRED"


#: marks a parameter without a default
REQUIRED = _Required()


class LibraryDefect(RuntimeError):
    """A library failed inside its own code on a call that its documentation allows, whatever
    the data (a crash, not a refusal of a bad parameter): a finding about the library, with
    its version and the source line in the message. A target whose calls raise it declares
    the defect (:attr:`Target.defect`); an audit of it ends with one ``error:`` line naming
    it, and the NaN regression table records the verdict ``fails``."""


class NanSemantics(Choice):
    """What a target's library does with a NaN (a missing entry) among the values it reads.

    ``PROPAGATES``
        any NaN makes the release NaN: NaN exactly when some entry is missing.
    ``SKIPS``
        the statistic runs over the observed entries only (``np.nanmean``); NaN when none is.
    ``READ_AS_ZERO``
        a NaN contributes 0 (``np.nansum``).
    ``IMPUTES_CONSTANT``
        each NaN is replaced by a constant before clamping; never NaN.
    ``DROPS``
        NaN entries are removed before the statistic (the size is no longer known); never NaN.
    ``COUNTED``
        counted like any other value (a count); never NaN.
    ``UNCHECKED``
        the input domain is declared NaN-free and invocation does not check it: a NaN is
        outside the library's guarantee (the caller's contract), and what it does is the
        library's accident (OpenDP's float noise reads a NaN sum as 0, #2935); never NaN.
    ``IMPUTES_FROM_DATA``
        each NaN is replaced by a value computed from the other records (a mean, a median, a
        donor's value: an imputer), before the release; never NaN.
    ``SETS_DOMAIN``
        whether the data hold a NaN changes what the release can be, before any noise (dpmm:
        a NaN-indicator column exists only when the input has a NaN, so a synthetic NaN is
        possible only then): no finite ε covers a pair with and without a NaN; never NaN.
    """

    PROPAGATES = "propagates"
    SKIPS = "skips"
    READ_AS_ZERO = "read-as-zero"
    IMPUTES_CONSTANT = "imputes-constant"
    DROPS = "drops"
    COUNTED = "counted"
    UNCHECKED = "unchecked"
    SETS_DOMAIN = "sets-domain"
    IMPUTES_FROM_DATA = "imputes-from-data"

    @classmethod
    def _parameter_name(cls) -> str:
        return "nan"


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or ":" in value or value != value.strip():
        raise ValueError(f"{what} must be a non-empty string without ':' or surrounding "
                         f"spaces, got {what}={value!r}")
    return value



#: one place of ``Target.source``: a relative path with a file extension, a line or a range
_PLACE = re.compile(r"(?!/)(?:[\w.-]+/)*[\w.-]+\.\w+:(\d+)(?:-(\d+))?")


def _check_source(owner: str, source: object) -> None:
    """ValueError unless ``source`` is one or more ``path:LINE`` / ``path:FIRST-LAST``
    (``Target.source``), ``'; '``-separated."""
    usage = ("'path/in/package.py:LINE' or ':FIRST-LAST' relative to the package's "
             "directory, several '; '-separated")
    if not isinstance(source, str) or not source:
        raise ValueError(f"{owner}: source must be {usage}, got source={source!r}")
    for place in source.split("; "):
        m = _PLACE.fullmatch(place)
        first, last = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, 0)
        if m is None or ".." in place.split(":")[0].split("/") or not 1 <= first <= last \
                or (m.group(2) and first == last):
            raise ValueError(f"{owner}: source must be {usage}, got source={source!r} "
                             f"(at {place!r})")


def _items(owner: str, field_name: str, items, cls: type, key: str, *,
           allow_empty: bool = False) -> tuple:
    """``items`` as a tuple of ``cls`` objects with unique ``key``s (ValueError otherwise)."""
    out = tuple(items)
    if (not out and not allow_empty) or not all(isinstance(x, cls) for x in out):
        some = "" if allow_empty else "one or more "
        raise ValueError(f"{owner}: {field_name} must be {some}{cls.__name__} objects, got "
                         f"{field_name}={items!r}")
    keys = [getattr(x, key) for x in out]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{owner}: {field_name} must have unique {key}s, got {keys}")
    return out

@dataclass(frozen=True)
class Parameter:
    """One parameter a target accepts: its name, default (:data:`REQUIRED`: none) and a
    one-line description (the adapter module's docstring has the details)."""

    name: str
    default: object = REQUIRED
    doc: str = ""

    def __post_init__(self) -> None:
        _name(self.name, "name")

    @property
    def required(self) -> bool:
        """Whether the parameter must be given."""
        return self.default is REQUIRED


@dataclass(frozen=True)
class Example:
    """A named call of a target: ``make_implementation(target, epsilon=epsilon,
    delta=delta, params=params)``. The contract tests run every example, the benchmark times
    every example, and experiments pick theirs by name.

    ``params`` is stored as a read-only copy; :meth:`kwargs` returns a fresh deep copy.
    """

    name: str
    params: Mapping[str, object] = field(default_factory=dict)
    epsilon: float = 1.0
    delta: float = 0.0
    doc: str = ""

    def __post_init__(self) -> None:
        _name(self.name, "name")
        if not isinstance(self.params, Mapping) or not all(isinstance(k, str)
                                                           for k in self.params):
            raise ValueError(f"params must be a mapping with string keys, got "
                             f"params={self.params!r}")
        object.__setattr__(self, "params", MappingProxyType(copy.deepcopy(dict(self.params))))
        object.__setattr__(self, "epsilon", check_positive(self.epsilon, "epsilon"))
        delta = check_delta(self.delta, "delta")
        if delta >= 1.0:
            raise ValueError(f"delta must be in [0, 1), got delta={delta!r}")
        object.__setattr__(self, "delta", delta)

    def kwargs(self) -> dict:
        """The example's parameters as a new dict (nested values copied too)."""
        return copy.deepcopy(dict(self.params))


@dataclass(frozen=True)
class Target:
    """One function of a library: ``"<library>:<function>"``.

    ``nan`` is what a NaN does with the default parameters; a target with a ``nan`` parameter
    lists in ``nan_options`` the semantics of each value it accepts (the default's among
    them). ``summary`` says it in one line, for tables (the module docstring cites sources).

    ``source`` (required, keyword) is where in the library's own code a NaN's fate is decided
    for this function, for the library version the adapter pins or declares:
    ``path/in/package.py:LINE`` or ``path/in/package.py:FIRST-LAST``, the path relative to
    the directory holding the installed package and starting with the package's own
    directory (``diffprivlib/tools/utils.py:290-293``); several places ``'; '``-separated.
    Where that code is compiled and not installed (OpenDP's Rust, the C++ under python-dp),
    the line cited is the Python-side one that hands the values or the chain over to it, and
    the adapter's module docstring says so. The NaN regression table prints it beside each
    row's cause and root cause.

    ``defect``, when not empty, is a known defect of the library (one line: version, function,
    source line) that keeps the target from releasing: its calls raise
    :class:`LibraryDefect` until a release of the library fixes it.
    """

    function: str
    parameters: tuple[Parameter, ...]
    nan: NanSemantics
    examples: tuple[Example, ...]
    summary: str = ""
    nan_options: Mapping[str, NanSemantics] = field(default_factory=dict)
    source: str = field(kw_only=True)
    defect: str = ""

    def __post_init__(self) -> None:
        _name(self.function, "function")
        _check_source(self.function, self.source)
        if not isinstance(self.defect, str):
            raise ValueError(f"{self.function}: defect must be a string, got "
                             f"defect={self.defect!r}")
        params = _items(self.function, "parameters", self.parameters, Parameter, "name",
                        allow_empty=True)
        object.__setattr__(self, "parameters", params)
        object.__setattr__(self, "nan", parse_enum(NanSemantics, self.nan, "nan"))
        options = {str(k): parse_enum(NanSemantics, v, "nan_options")
                   for k, v in dict(self.nan_options).items()}
        object.__setattr__(self, "nan_options", MappingProxyType(options))
        if options:
            default = self.accepted().get("nan")
            if default is None or options.get(default) is not self.nan:
                raise ValueError(f"{self.function}: nan_options needs a parameter 'nan' whose "
                                 f"default ({default!r}) maps to nan={self.nan.value!r}")
        self._check_examples()

    def _check_examples(self) -> None:
        examples = _items(self.function, "examples", self.examples, Example, "name")
        accepted = self.accepted()
        for e in examples:
            unknown = sorted(set(e.params) - set(accepted))
            missing = [p.name for p in self.parameters if p.required and p.name not in e.params]
            if unknown or missing:
                raise ValueError(f"{self.function}: example {e.name!r} has unknown parameters "
                                 f"{unknown} or lacks required ones {missing}")
        object.__setattr__(self, "examples", examples)

    def accepted(self) -> dict[str, object]:
        """Parameter name -> default (:data:`REQUIRED` for none), in declaration order."""
        return {p.name: p.default for p in self.parameters}

    def example(self, name: str) -> Example:
        """The example called ``name``."""
        for e in self.examples:
            if e.name == name:
                return e
        raise ValueError(f"example must be one of {', '.join(repr(e.name) for e in self.examples)}"
                         f" for {self.function!r}, got example={name!r}")

    def nan_semantics(self, params: Mapping[str, object] | None = None) -> NanSemantics:
        """What a NaN does with ``params`` (only their ``nan`` entry matters)."""
        if not self.nan_options:
            return self.nan
        value = (params or {}).get("nan", self.accepted()["nan"])
        key = value.lower() if isinstance(value, str) else value
        if key not in self.nan_options:
            raise ValueError(f"nan must be one of {', '.join(map(repr, self.nan_options))}, "
                             f"got nan={value!r}")
        return self.nan_options[key]


@dataclass(frozen=True)
class Adapter:
    """A DP library as a source of black-box implementations.

    Parameters
    ----------
    library : str
        The name in targets (``"opendp"`` in ``"opendp:sum"``) and of its entry point; no
        ``:`` or ``.`` (a dotted name is a user's ``package.module:function``).
    distribution : str
        The distribution whose version the claims record (``"pipeline-dp"``).
    import_name : str
        The top-level module the library installs (``"pipeline_dp"``), for import checks.
    seedable : bool
        Whether the same ``rng`` seed reproduces a release (False: the library draws from its
        own CSPRNG).
    relation : Relation
        The neighbouring relation the library's guarantee is stated for; the adapter converts
        it with :func:`audit.adapters.relations.to_substitution`.
    targets : tuple of Target
        The functions offered, each with its parameters, NaN semantics and examples.
    make : callable
        ``make(function, *, epsilon, delta, params) -> CallableImplementation`` claiming
        (ε, δ) per substituted record; called with a checked ε > 0, δ ∈ [0, 1) and a known
        function.
    summary : str
        One line: the library and what is wrapped.
    environment : Environment or None
        An isolated target's own environment (:mod:`audit.adapters.isolation`): the library
        is not imported here but in a worker there, and ``make`` returns an
        :class:`~audit.adapters.isolation.client.IsolatedImplementation`. None: the library
        is imported into the auditor's process (``import_name``).
    unseeded : tuple of (str, object)
        Parameter values that hand the noise of a seedable adapter to a library's own
        generator (``(("release", "opendp"),)``): a release made with one of them is not
        reproduced by the seed (:meth:`seeded`).
    """

    library: str
    distribution: str
    import_name: str
    seedable: bool
    relation: Relation
    targets: tuple[Target, ...]
    make: Callable = field(repr=False)
    summary: str = ""
    environment: Environment | None = None
    unseeded: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        _name(self.library, "library")
        if "." in self.library:
            raise ValueError(f"library must not contain '.' (a dotted name is a user's "
                             f"'package.module:function'), got library={self.library!r}")
        _name(self.distribution, "distribution")
        _name(self.import_name, "import_name")
        check_bool(self.seedable, "seedable")
        object.__setattr__(self, "relation", Relation.parse(self.relation))
        targets = _items(self.library, "targets", self.targets, Target, "function")
        object.__setattr__(self, "targets", targets)
        if not callable(self.make):
            raise ValueError(f"{self.library}: make must be callable, got make={self.make!r}")
        if self.environment is not None and not isinstance(self.environment, Environment):
            raise ValueError(f"{self.library}: environment must be an audit.adapters.isolation."
                             f"Environment or None, got environment={self.environment!r}")
        unseeded = tuple(tuple(u) for u in self.unseeded)
        if not all(len(u) == 2 and isinstance(u[0], str) for u in unseeded):
            raise ValueError(f"{self.library}: unseeded must hold (parameter, value) pairs, "
                             f"got unseeded={self.unseeded!r}")
        object.__setattr__(self, "unseeded", unseeded)

    def seeded(self, params: dict | None = None) -> bool:
        """Whether the same ``rng`` seed reproduces a release made with ``params``:
        ``seedable``, unless a value of ``unseeded`` is among the parameters."""
        params = params or {}
        return self.seedable and not any(name in params and params[name] == value
                                          for name, value in self.unseeded)

    @property
    def isolated(self) -> bool:
        """Whether the library runs in its own environment (a worker process)."""
        return self.environment is not None

    @property
    def functions(self) -> tuple[str, ...]:
        """The functions offered, in declaration order."""
        return tuple(t.function for t in self.targets)

    def target(self, function: str) -> Target:
        """The target ``function``; ValueError listing those available otherwise."""
        for t in self.targets:
            if t.function == function:
                return t
        raise ValueError(f"unknown function {function!r} for library {self.library!r}; "
                         f"available: {', '.join(f'{self.library}:{f}' for f in self.functions)}")
