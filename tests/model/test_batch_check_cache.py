"""The batch check's results cached on disk (``audit.model.batch_check``): a later process, or
this one with its in-process cache cleared, reads the result instead of checking again; a
changed rule, parameter, claim, library version or source is a new key and checks again; a
corrupt file is ignored and written again. Plain-numpy fakes, each counting its calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from audit.cache import CACHE_ENV
from audit.model import batch_check
from audit.model.batch_check import cache_file, checked
from audit.model.implementation import CallableImplementation, Claim
from audit.policy import DEFAULT_POLICY, BatchCheckRule

pytestmark = pytest.mark.statistical  # the fakes pass the check (fixed seed; α = 10⁻⁶)

DATA = np.array([[1.0], [0.0], [np.nan], [0.0]])
ROOT = Path(__file__).resolve().parents[2]
RULE = DEFAULT_POLICY.batch_check


class Counted:
    """A sum with independent Laplace noise, its batched form stated as one call; counts the
    releases it makes."""

    def __init__(self):
        self.made = 0

    def one(self, data, rng):
        self.made += 1
        return float(np.nansum(data)) + rng.laplace(0.0, 2.0)

    def batch(self, datasets, rng):
        self.made += len(datasets)
        return np.nansum(datasets, axis=(1, 2)) + rng.laplace(0.0, 2.0, len(datasets))

    def impl(self, name="counted", params=None, claim=None):
        return CallableImplementation(self.one, claim or Claim(1.0, 0.0, "lib 1.0"), name,
                                      batch_func=self.batch, params=params or {},
                                      batch_in_one_call=True)


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    batch_check.clear_cache()
    yield
    batch_check.clear_cache()


def _check_count(fake, impl, rule=None) -> tuple[int, batch_check.BatchCheck]:
    before = fake.made
    _, result = checked(impl, DATA, rule=rule)
    return fake.made - before, result


def test_a_cleared_process_cache_reads_the_check_from_disk():
    fake = Counted()
    made, first = _check_count(fake, fake.impl())
    assert made == RULE.calls * RULE.per_call + RULE.unbatched and not first.cached
    path, _ = cache_file(fake.impl(), DATA.shape, RULE)
    assert path.parent == Path(os.environ[CACHE_ENV]) / "batch-checks" and path.is_file()
    batch_check.clear_cache()
    made, again = _check_count(fake, fake.impl())
    assert made == 0 and again.cached and again.passed
    assert again.p_values == first.p_values and again.seconds == first.seconds
    assert again.to_dict()["cached"] is True and "cached from an earlier run" in again.describe()


@pytest.mark.parametrize("change", ["rule", "params", "claim", "name", "version"])
def test_a_changed_key_checks_again(change, monkeypatch):
    fake = Counted()
    _check_count(fake, fake.impl())
    batch_check.clear_cache()
    impl, rule = fake.impl(), None
    if change == "rule":
        rule = BatchCheckRule(calls=4, per_call=6, unbatched=10)
    elif change == "params":
        impl = fake.impl(params={"bound": 2.0})
    elif change == "claim":  # adapters write the library's version in the claim's note
        impl = fake.impl(claim=Claim(1.0, 0.0, "lib 1.1"))
    elif change == "name":
        impl = fake.impl(name="other")
    else:  # the installed distribution of the implementation's code
        monkeypatch.setattr(batch_check, "_version", lambda module: "lib 9.9")
    made, result = _check_count(fake, impl, rule)
    assert made > 0 and not result.cached


def test_an_edited_source_checks_again(tmp_path, monkeypatch):
    """A user's module edited between runs is a new key (the digest of its source)."""
    module = tmp_path / "user_mech.py"
    body = textwrap.dedent("""
        import numpy as np

        def release(data, rng):
            return float(np.nansum(data)) + rng.laplace(0.0, {scale})

        def batch(datasets, rng):
            return np.nansum(datasets, axis=(1, 2)) + rng.laplace(0.0, {scale}, len(datasets))

        release.batch = batch
        release.batch_in_one_call = True
        """)
    module.write_text(body.format(scale=2.0))
    monkeypatch.syspath_prepend(str(tmp_path))
    from audit.adapters import make_implementation

    impl = make_implementation("user_mech:release", epsilon=1.0)
    first = cache_file(impl, DATA.shape, RULE)
    assert not checked(impl, DATA)[1].cached
    batch_check.clear_cache()
    assert checked(impl, DATA)[1].cached
    module.write_text(body.format(scale=2.5))
    os.utime(module, ns=(1, 1))  # a new mtime even within the clock's resolution
    assert cache_file(impl, DATA.shape, RULE) != first
    batch_check.clear_cache()
    assert not checked(impl, DATA)[1].cached


def test_a_corrupt_or_foreign_file_is_ignored_and_written_again():
    fake = Counted()
    path, material = cache_file(fake.impl(), DATA.shape, RULE)
    path.parent.mkdir(parents=True)
    for content in ("{not json", json.dumps({"schema": 1, "key": "another target",
                                             "result": {}}),
                    json.dumps({"schema": 1, "key": material, "result": {"name": "x"}})):
        path.write_text(content)
        batch_check.clear_cache()
        made, result = _check_count(fake, fake.impl())
        assert made > 0 and not result.cached
        assert json.loads(path.read_text())["key"] == material
    batch_check.clear_cache()
    assert _check_count(fake, fake.impl())[0] == 0
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_refused_check_is_cached_too():
    def shared(datasets, rng):
        return np.nansum(datasets, axis=(1, 2)) + rng.laplace(0.0, 2.0)

    fake = Counted()
    impl = CallableImplementation(fake.one, Claim(1.0), "shared", batch_func=shared,
                                  batch_in_one_call=True)
    with pytest.warns(batch_check.BatchRefused):
        checked(impl, DATA)
    batch_check.clear_cache()
    made = fake.made
    with pytest.warns(batch_check.BatchRefused, match="cached"):
        out, result = checked(impl, DATA)
    assert fake.made == made and result.cached and out.batch is None


def test_an_implementation_names_its_own_folder_or_opts_out(tmp_path):
    """An isolated target caches in its environment's folder; one whose identity is None
    (its environment not built here) is checked in this process only."""
    fake = Counted()

    class Isolated:
        claim, name, batch_in_one_call, params = Claim(1.0), "isolated", True, {}
        batch_check_folder = tmp_path / "envs" / "k" / "batch-checks"
        identity = {"environment": "k"}

        def cache_identity(self):
            return self.identity

        def batch(self, datasets, rng):
            return fake.batch(datasets, rng)

        def __call__(self, data, rng):
            return fake.one(data, rng)

    impl = Isolated()
    checked(impl, DATA)
    assert len(list(Isolated.batch_check_folder.glob("*.json"))) == 1
    batch_check.clear_cache()
    impl.identity = {"environment": "rebuilt"}
    assert not checked(impl, DATA)[1].cached
    batch_check.clear_cache()
    impl.identity = None
    assert cache_file(impl, DATA.shape, RULE) is None
    assert not checked(impl, DATA)[1].cached and not checked(impl, DATA)[1].cached


SCRIPT = """
import json, sys, time
import numpy as np
from audit.adapters import make_implementation
from audit.model.batch_check import checked
impl = make_implementation("tests.model.test_batch_check_cache:independent", epsilon=1.0)
t0 = time.perf_counter()
_, result = checked(impl, np.array([[1.0], [0.0], [np.nan], [0.0]]))
print(json.dumps({"cached": result.cached, "seconds": time.perf_counter() - t0,
                  "p": result.p_values}))
"""


def independent(data, rng):
    return float(np.nansum(data)) + rng.laplace(0.0, 2.0)


def _independent_batch(datasets, rng):
    return np.nansum(datasets, axis=(1, 2)) + rng.laplace(0.0, 2.0, len(datasets))


independent.batch = _independent_batch
independent.batch_in_one_call = True


def test_a_second_process_skips_the_check(tmp_path):
    env = {**os.environ, CACHE_ENV: str(tmp_path / "shared-cache")}
    runs = [json.loads(subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                                      capture_output=True, text=True, check=True,
                                      timeout=120).stdout) for _ in range(2)]
    assert [r["cached"] for r in runs] == [False, True]
    assert runs[0]["p"] == runs[1]["p"]


def test_the_audit_result_and_summary_say_cached():
    from audit.cli.run import format_result
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.runner import run_audit

    doc = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "n": 4, "d": 1,
                        "bound": 1.0, "query": "sum"},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "pair": {"z": [[1.0], [0.0], [0.0], [0.0]],
                    "z_prime": [[-1.0], [0.0], [0.0], [0.0]]},
           "audit": {"trials": 400, "seed": 0}}
    fake = Counted()
    first = run_audit(config_from_dict(doc, name="a"), implementation=fake.impl())
    assert first.claim.to_dict()["batch_check"]["cached"] is False
    batch_check.clear_cache()
    again = run_audit(config_from_dict(doc, name="a"), implementation=fake.impl())
    assert again.claim.to_dict()["batch_check"]["cached"] is True
    assert "cached from an earlier run" in format_result(again)
