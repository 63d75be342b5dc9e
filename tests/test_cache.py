"""The auditor's cache on disk (``audit.cache``): where it is, and its atomic JSON files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.cache import CACHE_ENV, cache_root, read_json, write_json_atomic


def test_the_root_follows_the_variables(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "own"))
    assert cache_root() == tmp_path / "own"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "missingness-audit"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == Path.home() / ".cache" / "missingness-audit"


def test_json_round_trip_makes_the_folder(tmp_path):
    path = tmp_path / "a" / "b.json"
    write_json_atomic(path, {"x": [1.5, 2]})
    assert read_json(path) == {"x": [1.5, 2]}
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]


@pytest.mark.parametrize("content", ["{half", "[1, 2]", "", "\xff"])
def test_unreadable_files_are_misses(tmp_path, content):
    path = tmp_path / "c.json"
    path.write_text(content, encoding="latin-1")
    assert read_json(path) is None
    assert read_json(tmp_path / "missing.json") is None


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(tmp_path):
    path = tmp_path / "d.json"
    write_json_atomic(path, {"old": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"new": object()})  # not serialisable, mid-write
    assert json.loads(path.read_text()) == {"old": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["d.json"]
