"""audit.pipeline.results: the JSON document, typed witnesses read back, atomic writes."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from audit.enums import Direction
from audit.estimation.regions import RegionBound
from audit.estimation.sequential import SequentialBound
from audit.pipeline import results
from audit.pipeline.results import (
    bound_from_witness,
    check_output_file,
    save_json,
    to_jsonable,
    write_text_atomic,
)

REGION = RegionBound(0.7, Direction.Z_VS_ZPRIME, 0.72, 32440, 10**8, 14982, 10**8, 3.2e-4,
                     1.5e-4, 0.05, 0.0, "model", 1)
SEQUENTIAL = SequentialBound(0.5, Direction.ZPRIME_VS_Z, -1.0, "sequential betting e-process",
                             0.05, 0.0, 4000, True, (0.5, 1.0), (3000, -1), (3.1, 0.2))


@pytest.mark.parametrize("bound", [REGION, SEQUENTIAL])
def test_a_witness_reads_back_as_the_bound_it_was(bound):
    doc = json.loads(json.dumps(to_jsonable(bound.to_dict())))
    assert bound_from_witness(doc) == bound
    assert doc["kind"] in ("region", "sequential")


def test_witnesses_written_before_the_kind_key_still_load():
    old_region = {k: v for k, v in to_jsonable(REGION.to_dict()).items() if k != "kind"}
    old_seq = {k: v for k, v in to_jsonable(SEQUENTIAL.to_dict()).items() if k != "kind"}
    assert isinstance(bound_from_witness(old_region), RegionBound)
    assert isinstance(bound_from_witness(old_seq), SequentialBound)
    inf = dict(old_region, q_hi="inf")
    assert bound_from_witness(inf).q_hi == float("inf")


@pytest.mark.parametrize("bad, needle", [([1, 2], "JSON object"), ({"eps_lower": 1}, "missing")])
def test_a_malformed_witness_is_refused(bad, needle):
    with pytest.raises(ValueError, match=needle):
        bound_from_witness(bad)


def test_atomic_write_replaces_a_file_and_follows_a_link(tmp_path):
    target = tmp_path / "a.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_text_atomic("new", link)
    assert link.is_symlink() and target.read_text() == "new"


def test_atomic_write_writes_through_a_device_and_never_replaces_it():
    write_text_atomic("{}\n", "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert check_output_file("/dev/null", "--json") == Path("/dev/null")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text('{"kept": true}')

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results.os, "replace", full)
    with pytest.raises(OSError, match="No space left"):
        save_json({"a": 1}, target)
    assert json.loads(target.read_text()) == {"kept": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
