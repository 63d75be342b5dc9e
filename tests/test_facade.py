"""The package facade: every lazy export resolves, and the TYPE_CHECKING mirror that type
checkers read names exactly the same objects."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import audit

INIT = Path(audit.__file__)


def _mirror() -> dict[str, str]:
    """name -> module of every import inside ``if TYPE_CHECKING:`` in audit/__init__.py."""
    tree = ast.parse(INIT.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and getattr(n.test, "id", None) == "TYPE_CHECKING")
    out = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


@pytest.mark.parametrize("name", sorted(audit._EXPORTS))
def test_every_export_resolves_to_what_it_names(name):
    module, attr = audit._EXPORTS[name]
    expected = importlib.import_module(module)
    if attr is not None:
        expected = getattr(expected, attr)
    assert getattr(audit, name) is expected


def test_type_checking_mirror_names_the_same_objects():
    mirror = _mirror()
    assert set(mirror) == set(audit._EXPORTS)
    for name, dotted in mirror.items():
        module, _, attr = dotted.rpartition(".")
        try:
            obj = getattr(importlib.import_module(module), attr)
        except AttributeError:  # ``from audit.theory import accountant``: a submodule
            obj = importlib.import_module(dotted)
        assert getattr(audit, name) is obj, name


def test_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        audit.nope  # noqa: B018
