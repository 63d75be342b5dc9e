"""The entry points of a group, read once per group and search path.

``importlib.metadata.entry_points(group=...)`` reads the metadata of every installed
distribution on each call (about 15 ms with the libraries installed), and reading a config
asks for the attacks, the adapters and the designs several times over: 35 ms a config, 25 s
for the 720 configs of ``tests/pipeline/test_combinations.py``. The scan is cached on the
group, ``sys.path`` (a distribution added to the path is seen) and the function
``importlib.metadata.entry_points`` itself (a test that replaces it is seen).
"""

from __future__ import annotations

import functools
import sys
from importlib import metadata

__all__ = ["entry_points_of"]


def entry_points_of(group: str) -> dict[str, metadata.EntryPoint]:
    """The entry points registered under ``group``, by name (in the scan's order)."""
    return dict(_scan(group, tuple(sys.path), metadata.entry_points))


@functools.lru_cache(maxsize=32)
def _scan(group: str, _path: tuple, reader) -> tuple:
    return tuple((ep.name, ep) for ep in reader(group=group))
