"""``python -m audit env``: listing the isolated libraries' environments, the one-line errors
(fast, on an empty cache), and a build (marked ``isolated``: it downloads from the package
registry)."""

from __future__ import annotations

import json

import pytest

from audit.adapters.isolation import environments as envs
from audit.cli import main


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(envs.CACHE_ENV, str(tmp_path))
    return tmp_path


def test_list_names_every_isolated_library_and_what_is_built(empty_cache, capsys):
    (empty_cache / "envs" / "0123").mkdir(parents=True)
    (empty_cache / "envs" / "0123" / envs.DESCRIPTION).write_text(json.dumps({"name": "old"}))
    assert main(["env", "list"]) == 0
    out = capsys.readouterr().out
    assert f"environments in {empty_cache / 'envs'}" in out
    assert "smartnoise-sql: python 3.11, 8 requirements" in out and "not built" in out
    assert "tumult: python 3.11, 21 requirements" in out
    assert "dpmm: python 3.11, 17 requirements" in out
    assert "old: key 0123: not the environment of a registered isolated library" in out


@pytest.mark.parametrize(("argv", "needle"), [
    (["env", "build", "diffprivlib"], "no isolated library 'diffprivlib' (isolated "
                                      "libraries: dpmm, smartnoise-sql, tumult)"),
    (["env", "build"], "env build needs the library's name"),
    (["env", "remove"], "env remove needs the library's name"),
    (["env", "list", "smartnoise-sql"], "env list takes no name"),
])
def test_errors_are_one_line_and_exit_2(empty_cache, capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"error: {needle}\n"


def test_an_unknown_action_is_argparses_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["env", "rebuild"])
    assert info.value.code == 2 and capsys.readouterr().err.startswith("error: ")


def test_remove_deletes_only_that_librarys_environments(empty_cache, capsys):
    for key, name in (("a1", "smartnoise-sql"), ("b2", "other")):
        (empty_cache / "envs" / key).mkdir(parents=True)
        (empty_cache / "envs" / key / envs.DESCRIPTION).write_text(json.dumps({"name": name}))
    assert main(["env", "remove", "smartnoise-sql"]) == 0
    assert "smartnoise-sql: removed 1 environment(s)" in capsys.readouterr().out
    assert sorted(p.name for p in (empty_cache / "envs").iterdir() if p.is_dir()) == ["b2"]


@pytest.mark.isolated
def test_build_then_list_shows_it_built(isolated_cache, capsys):
    assert main(["env", "build", "smartnoise-sql"]) == 0
    assert "smartnoise-sql: built at" in capsys.readouterr().out
    assert main(["env", "list"]) == 0
    assert "smartnoise-sql: python 3.11, 8 requirements, key " in capsys.readouterr().out
