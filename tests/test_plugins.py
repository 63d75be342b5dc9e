"""The entry-point scan: read once per group and search path, and a replaced reader is seen."""

from __future__ import annotations

import sys
from importlib import metadata

from audit._plugins import _scan, entry_points_of


def test_a_group_is_scanned_once_and_matches_importlib():
    _scan.cache_clear()
    first = entry_points_of("audit.attacks")
    assert first == {ep.name: ep for ep in metadata.entry_points(group="audit.attacks")}
    assert "exact-lr" in first
    entry_points_of("audit.attacks")
    assert _scan.cache_info().hits == 1 and _scan.cache_info().misses == 1


def test_a_new_search_path_or_reader_is_scanned_again(monkeypatch, tmp_path):
    before = entry_points_of("audit.attacks")
    monkeypatch.syspath_prepend(str(tmp_path))
    misses = _scan.cache_info().misses
    assert entry_points_of("audit.attacks") == before
    assert _scan.cache_info().misses == misses + 1
    fake = metadata.EntryPoint("fake", "tests.test_plugins:fake", "audit.attacks")
    monkeypatch.setattr(metadata, "entry_points", lambda group: [fake])
    assert entry_points_of("audit.attacks") == {"fake": fake}
    assert sys.path[0] == str(tmp_path)
