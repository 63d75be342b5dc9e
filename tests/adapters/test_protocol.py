"""The adapter protocol: the dataclasses refuse inconsistent declarations, and what every
registered adapter declares is what it does (parameters, NaN options, distribution)."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import re
from importlib import metadata
from pathlib import Path

import pytest

from audit.adapters import (
    REQUIRED,
    Adapter,
    Example,
    NanSemantics,
    Parameter,
    Relation,
    Target,
    adapters,
    make_implementation,
)

BOUNDS = Parameter("bounds", REQUIRED)
NAN = Parameter("nan", "keep")
EX = Example("default", {"bounds": [-1.0, 1.0]})


def _make(function, *, epsilon, delta, params):  # pragma: no cover - never called
    raise AssertionError


def _target(**kw) -> Target:
    args = {"function": "sum", "parameters": (BOUNDS,), "nan": "propagates", "examples": (EX,),
            "source": "lib/sum.py:10"}
    return Target(**{**args, **kw})


def _adapter(**kw) -> Adapter:
    args = {"library": "lib", "distribution": "lib", "import_name": "lib", "seedable": True,
            "relation": "add-remove", "targets": (_target(),), "make": _make}
    return Adapter(**{**args, **kw})


def test_choices_parse_at_the_boundary():
    a = _adapter()
    assert a.relation is Relation.ADD_REMOVE and a.targets[0].nan is NanSemantics.PROPAGATES
    assert a.functions == ("sum",) and a.target("sum") is a.targets[0]


def test_a_parameter_value_can_hand_the_noise_to_the_library():
    a = _adapter(unseeded=(("release", "opendp"),))
    assert a.seeded() and a.seeded({"release": "laplace"})
    assert not a.seeded({"release": "opendp"})
    assert not _adapter(seedable=False).seeded({"release": "laplace"})


def test_an_example_is_a_read_only_copy():
    params = {"bounds": [-1.0, 1.0]}
    ex = Example("e", params)
    params["bounds"].append(3.0)
    params["extra"] = 1
    assert dict(ex.params) == {"bounds": [-1.0, 1.0]}
    with pytest.raises(TypeError):
        ex.params["bounds"] = (0, 1)  # type: ignore[index]
    assert ex.kwargs() == {"bounds": [-1.0, 1.0]} and ex.kwargs() is not ex.kwargs()


def test_required_is_one_picklable_sentinel():
    assert repr(REQUIRED) == "REQUIRED" and pickle.loads(pickle.dumps(REQUIRED)) is REQUIRED
    assert BOUNDS.required and not NAN.required


@pytest.mark.parametrize(("build", "needle"), [
    (lambda: Example("", {}), "name must be a non-empty string"),
    (lambda: Example("e", {1: 2}), "params must be a mapping with string keys"),
    (lambda: Example("e", {}, epsilon=0.0), "epsilon must be in"),
    (lambda: Example("e", {}, delta=1.0), "delta must be in [0, 1)"),
    (lambda: Parameter("a:b"), "name must be a non-empty string without ':'"),
    (lambda: _target(parameters=(BOUNDS, BOUNDS)), "parameters must have unique names"),
    (lambda: _target(parameters=("bounds",)), "parameters must be Parameter objects"),
    (lambda: _target(examples=()), "examples must be one or more Example objects"),
    (lambda: _target(examples=(EX, EX)), "examples must have unique names"),
    (lambda: _target(examples=(Example("e", {"bounds": 1, "bonds": 2}),)),
     "unknown parameters ['bonds']"),
    (lambda: _target(examples=(Example("e", {}),)), "lacks required ones ['bounds']"),
    (lambda: _target(nan="zero"), "nan must be one of 'propagates'"),
    (lambda: _target(nan_options={"keep": "propagates"}), "needs a parameter 'nan'"),
    (lambda: _target(parameters=(BOUNDS, NAN), nan="drops", nan_options={"keep": "propagates"}),
     "default ('keep') maps to nan='drops'"),
    (lambda: _target(defect=None), "sum: defect must be a string, got defect=None"),
    (lambda: _adapter(library="my.lib"), "library must not contain '.'"),
    (lambda: _adapter(library="my:lib"), "library must be a non-empty string without ':'"),
    (lambda: _adapter(seedable=1), "seedable must be a bool"),
    (lambda: _adapter(unseeded=(("release",),)), "unseeded must hold (parameter, value) pairs"),
    (lambda: _adapter(relation="replace-one"), "relation must be one of"),
    (lambda: _adapter(targets=()), "targets must be one or more Target objects"),
    (lambda: _adapter(targets=(_target(), _target())), "targets must have unique functions"),
    (lambda: _adapter(make=None), "make must be callable"),
    (lambda: _target(source=""), "sum: source must be 'path/in/package.py:LINE'"),
    (lambda: _target(source=None), "source must be 'path/in/package.py:LINE'"),
    (lambda: _target(source="lib/sum.py"), "(at 'lib/sum.py')"),
    (lambda: _target(source="lib/sum.py:0"), "(at 'lib/sum.py:0')"),
    (lambda: _target(source="lib/sum.py:12-10"), "(at 'lib/sum.py:12-10')"),
    (lambda: _target(source="lib/sum.py:12-12"), "(at 'lib/sum.py:12-12')"),
    (lambda: _target(source="/abs/lib/sum.py:3"), "(at '/abs/lib/sum.py:3')"),
    (lambda: _target(source="../lib/sum.py:3"), "(at '../lib/sum.py:3')"),
    (lambda: _target(source="lib/sum:3"), "(at 'lib/sum:3')"),
    (lambda: _target(source="lib/sum.py:3;lib/sum.py:4"), "(at 'lib/sum.py:3;lib/sum.py:4')"),
    (lambda: _target(source="lib/sum.py:3; "), "(at '')"),
    (lambda: _target(source="lib/sum.py:3, 5"), "(at 'lib/sum.py:3, 5')"),
])
def test_inconsistent_declarations_are_refused(build, needle):
    with pytest.raises(ValueError) as info:
        build()
    assert needle in str(info.value), str(info.value)


def test_a_targets_source_is_required_and_may_name_several_places():
    args = {"function": "sum", "parameters": (BOUNDS,), "nan": "propagates", "examples": (EX,)}
    with pytest.raises(TypeError, match="source"):
        Target(**args)
    many = "lib/_core/sum.py:10-12; lib/noise.py:7; lib/__init__.py:3-4"
    assert _target(source=many).source == many
    assert _target(source="my-lib.x/sum.pyx:1").source == "my-lib.x/sum.pyx:1"


def test_nan_semantics_follow_the_nan_parameter():
    t = _target(parameters=(BOUNDS, NAN), nan="propagates",
                nan_options={"keep": "propagates", "drop": "drops"})
    assert t.nan_semantics() is NanSemantics.PROPAGATES
    assert t.nan_semantics({"nan": "DROP"}) is NanSemantics.DROPS
    with pytest.raises(ValueError, match="nan must be one of 'keep', 'drop', got nan='zero'"):
        t.nan_semantics({"nan": "zero"})
    assert _target().nan_semantics({"nan": "anything"}) is NanSemantics.PROPAGATES


def test_unknown_function_lists_the_targets():
    with pytest.raises(ValueError, match="unknown function 'median' for library 'lib'; "
                                         "available: lib:sum"):
        _adapter().target("median")


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        _adapter().seedable = False  # type: ignore[misc]


# ---------------------------------------------------------------- the registered adapters

REGISTERED = [(a, t) for a in adapters().values() for t in a.targets]
IDS = [f"{a.library}:{t.function}" for a, t in REGISTERED]


def _importable(adapter) -> None:
    """Skip unless the library imports here; an isolated library's parameters are checked
    here before its environment is needed, so it is never skipped."""
    if not adapter.isolated:
        pytest.importorskip(adapter.import_name)


@pytest.mark.parametrize(("adapter", "target"), REGISTERED, ids=IDS)
def test_declared_parameters_are_those_make_accepts(adapter, target):
    """An unknown parameter's error lists exactly the declared names, in order; a required
    one left out is named."""
    _importable(adapter)
    name = f"{adapter.library}:{target.function}"
    ex = target.examples[0]
    with pytest.raises(ValueError) as info:
        make_implementation(name, epsilon=ex.epsilon, delta=ex.delta,
                            params={**ex.kwargs(), "zz_unknown": 1})
    assert str(info.value).endswith("accepted: " + ", ".join(target.accepted())), info.value
    for p in target.parameters:
        if p.required:
            params = {k: v for k, v in ex.kwargs().items() if k != p.name}
            with pytest.raises(ValueError, match=f"parameter '{p.name}' is required"):
                make_implementation(name, epsilon=1.0, delta=ex.delta, params=params)


class _Launched(Exception):
    """An isolated adapter got as far as starting its worker, with these parameters."""


@pytest.mark.parametrize(("adapter", "target"), REGISTERED, ids=IDS)
def test_declared_nan_options_are_those_make_accepts(adapter, target, monkeypatch):
    _importable(adapter)
    name = f"{adapter.library}:{target.function}"
    if not target.nan_options:
        assert "nan" not in target.accepted()
        return
    if adapter.isolated:  # accepted = handed to the worker; no environment is built here
        def no_worker(environment, module, params, **kw):
            raise _Launched(params)

        monkeypatch.setattr(importlib.import_module(adapter.make.__module__), "launch",
                            no_worker)
    ex = target.examples[0]
    for option in target.nan_options:
        try:
            impl = make_implementation(name, epsilon=ex.epsilon, delta=ex.delta,
                                       params={**ex.kwargs(), "nan": option})
            assert impl.params["nan"] == option
        except _Launched as launched:
            assert adapter.isolated and launched.args[0]["nan"] == option
    with pytest.raises(ValueError, match="parameter 'nan' must be one of"):
        make_implementation(name, epsilon=ex.epsilon, delta=ex.delta,
                            params={**ex.kwargs(), "nan": "zz_unknown"})


@pytest.mark.parametrize("adapter", list(adapters().values()), ids=list(adapters()))
def test_distribution_and_import_name_are_the_librarys(adapter):
    if adapter.isolated:  # installed in its environment, pinned there
        assert any(r.lower().startswith(adapter.distribution.lower() + "==")
                   for r in adapter.environment.requirements)
        assert adapter.summary and all(t.summary for t in adapter.targets)
        return
    module = pytest.importorskip(adapter.import_name)
    assert metadata.version(adapter.distribution)
    assert module.__name__ == adapter.import_name
    assert adapter.summary and all(t.summary for t in adapter.targets)


#: one place of a registered target's source, checked apart from the protocol's own pattern
_PLACE = re.compile(r"[A-Za-z_]\w*(?:/[\w.]+)*\.py:([1-9]\d*)(?:-([1-9]\d*))?")


def _site_packages(adapter) -> Path | None:
    """Where the cited files of ``adapter``'s library lie here: the installed distribution's
    folder, or an isolated library's environment if built with its pins (None otherwise)."""
    if adapter.isolated:
        from audit.adapters.isolation.environments import built

        for env in built():
            if env.description.get("requirements") == list(adapter.environment.requirements):
                return next(iter(env.path.glob("lib/python*/site-packages")), None)
        return None
    try:
        return Path(metadata.distribution(adapter.distribution).locate_file(""))
    except metadata.PackageNotFoundError:
        return None


@pytest.mark.parametrize("adapter", list(adapters().values()), ids=list(adapters()))
def test_every_registered_target_cites_its_librarys_source(adapter):
    """Each target names where the library decides a NaN's fate (``Target.source``): files of
    the library's distribution (installed here, or in its built environment), lines that
    exist in them. Which line is right is the adapter docstring's to argue; this catches a
    path of another package, a typo and a file shorter than the line cited."""
    root = _site_packages(adapter)
    files = None
    if root is not None and not adapter.isolated:
        files = {str(f) for f in metadata.distribution(adapter.distribution).files or ()}
    for t in adapter.targets:
        places = t.source.split("; ")
        assert t.source and all(_PLACE.fullmatch(p) for p in places), (t.function, t.source)
        assert len(set(places)) == len(places), (t.function, t.source)
        for place in places:
            path, lines = place.rsplit(":", 1)
            first, _, last = lines.partition("-")
            assert not last or int(first) < int(last), place
            if root is None:
                continue
            assert files is None or path in files, (
                f"{adapter.library}:{t.function} cites {path}, not a file of "
                f"{adapter.distribution}")
            text = (root / path).read_text(encoding="utf-8").splitlines()
            assert int(last or first) <= len(text), (place, len(text))
            assert text[int(first) - 1].strip(), f"{place} starts on a blank line"
