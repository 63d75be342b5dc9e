"""Isolated environments: the description, the key, where the cache is, the interpreter
search (fast); building one with a numpy < 2 pin, concurrently, reusing it, and a build that
fails (marked ``isolated``: they download from the package registry)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from audit.adapters.isolation import environments as envs
from audit.adapters.isolation.client import IsolatedImplementation, launch
from audit.adapters.isolation.environments import Environment
from audit.model.implementation import Claim

ROOT = Path(__file__).resolve().parents[3]
SIDE = Path(__file__).resolve().parent / "numpy_side.py"
#: the small environment of these tests: numpy 1.26 (the auditor runs numpy 2) on Python 3.11
OLD_NUMPY = Environment("test-old-numpy", ("numpy==1.26.4",), "3.11")


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"requirements": ()}, "requirements must be non-empty"),
    ({"requirements": ("pandas==2.3.3",)}, "must name numpy"),
    ({"python": "3"}, "python must look like '3.11'"),
    ({"python": "python3.11"}, "python must look like '3.11'"),
    ({"name": "a b"}, "name must be"),
])
def test_a_bad_description_is_refused_naming_the_field(kwargs, needle):
    fields = {"name": "t", "requirements": ("numpy==1.26.4",), "python": "3.11", **kwargs}
    with pytest.raises(ValueError, match=needle):
        Environment(**fields)


def test_the_key_follows_the_requirements_and_the_interpreter():
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    a = Environment("a", ("numpy==1.26.4",), here)
    assert a.key() == Environment("b", ("numpy==1.26.4",), here).key()  # the name is a label
    assert a.key() != Environment("a", ("numpy==1.26.3",), here).key()
    assert a.key("/usr/bin/python-elsewhere") != a.key()
    assert len(a.key()) == 16


def test_the_cache_is_where_the_variables_say(monkeypatch, tmp_path):
    monkeypatch.delenv(envs.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert envs.cache_root() == tmp_path / "xdg" / "missingness-audit"
    monkeypatch.setenv(envs.CACHE_ENV, str(tmp_path / "own"))
    assert envs.cache_root() == tmp_path / "own"


def test_the_running_python_is_found_and_a_missing_one_is_named():
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    path, full = envs.find_python(here)
    assert full == ".".join(map(str, sys.version_info[:3])) and Path(path).is_file()
    with pytest.raises(ValueError, match="python 3.99 is not on this machine"):
        envs.find_python("3.99")


def test_listing_and_removing_read_the_descriptions(monkeypatch, tmp_path):
    monkeypatch.setenv(envs.CACHE_ENV, str(tmp_path))
    for key, name in (("k1", "one"), ("k2", "two")):
        (tmp_path / "envs" / key).mkdir(parents=True)
        (tmp_path / "envs" / key / envs.DESCRIPTION).write_text(json.dumps({"name": name}))
    (tmp_path / "envs" / "half-built").mkdir()  # no description: not an environment
    assert [b.path.name for b in envs.built()] == ["k1", "k2"]
    assert envs.remove("one") == [tmp_path / "envs" / "k1"]
    assert [b.path.name for b in envs.built()] == ["k2"]


_BUILD = ("import sys, json\nsys.path.insert(0, {root!r})\n"
          "from audit.adapters.isolation.environments import ensure\n"
          "from tests.adapters.isolation.test_environments import OLD_NUMPY\n"
          "b = ensure(OLD_NUMPY)\nprint(json.dumps([str(b.path), b.description]))\n")


@pytest.mark.isolated
def test_two_concurrent_builders_build_once_then_it_is_reused(isolated_cache):
    """Two processes ask for the environment at once: one builds (in a temporary folder,
    renamed), the other waits on the lock and finds it; a later call reuses it at once."""
    envs.remove(OLD_NUMPY.name)
    code = _BUILD.format(root=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0] == outs[1]  # the same folder and the same build
    path = Path(outs[0][0])
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".build-")) == []
    print(f"built in {outs[0][1]['build_seconds']} s")
    start = time.monotonic()
    assert envs.ensure(OLD_NUMPY).path == path
    assert time.monotonic() - start < 5


@pytest.mark.isolated
def test_datasets_and_releases_cross_numpy_versions_exactly(isolated_cache):
    """The worker runs numpy 1.26 while this process runs numpy 2: the stack of datasets
    (NaN, ±inf, signed zeros) and the seeded releases come back bit for bit."""
    assert np.__version__.startswith("2.")
    worker, info = launch(OLD_NUMPY, SIDE, {"scale": 1.5}, name="t:sum")
    impl = IsolatedImplementation(OLD_NUMPY, str(SIDE), {"scale": 1.5}, Claim(1.0), "t:sum",
                                  info)
    impl.adopt(worker)
    try:
        assert worker.ready["numpy"] == "1.26.4" and info["numpy"] == "1.26.4"
        x = np.random.default_rng(0).normal(size=(64, 30, 3))
        x[x > 1.5] = np.nan
        out = impl.batch(x, np.random.default_rng(4))
        seed = int(np.random.default_rng(4).integers(2**63))
        want = np.nansum(x, axis=(1, 2)) + np.random.default_rng(seed).laplace(scale=1.5,
                                                                               size=64)
        assert out.tobytes() == want.tobytes()
    finally:
        impl.close()


@pytest.mark.isolated
def test_a_copy_in_another_process_starts_its_own_worker(isolated_cache):
    import cloudpickle

    impl = IsolatedImplementation(OLD_NUMPY, str(SIDE), {"scale": 0.0}, Claim(1.0), "t:sum")
    blob = cloudpickle.dumps(impl)
    code = ("import sys, pickle, numpy as np\nsys.path.insert(0, {root!r})\n"
            "impl = pickle.loads(sys.stdin.buffer.read())\n"
            "print(impl.batch(np.ones((2, 3, 2)), np.random.default_rng(0)).tolist())\n")
    done = subprocess.run([sys.executable, "-c", code.format(root=str(ROOT))], input=blob,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.decode().strip() == "[6.0, 6.0]"


@pytest.mark.isolated
def test_a_requirement_that_cannot_be_installed_is_one_line_with_pips_error(isolated_cache):
    bad = Environment("test-bad", ("numpy==1.26.4", "no-such-distribution-xq7==0.0.1"), "3.11")
    with pytest.raises(ValueError) as info:
        envs.ensure(bad)
    message = str(info.value)
    assert "\n" not in message and "building the environment of 'test-bad'" in message
    assert "pip install) failed" in message and "no-such-distribution-xq7" in message
    assert not (envs.cache_root() / "envs" / bad.key()).exists()
