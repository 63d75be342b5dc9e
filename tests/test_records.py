"""``audit.records``: the plain records the protocols name, below every layer.

- it imports no module of a layer above the shared vocabulary (an AST scan);
- each record keeps its behaviour where it moved from: a ceiling's key and violation, a
  comparison's finding, a claim report's JSON with and without a batch check, a batch
  check's verdict, a claim's validation, a pilot's split.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from audit.enums import CeilingKind
from audit.records import (
    BATCH_TESTS,
    BatchCheck,
    Ceiling,
    Claim,
    ClaimReport,
    Comparison,
    Pilot,
    Setting,
)

ROOT = Path(__file__).resolve().parents[1]


def test_records_import_nothing_above_the_shared_vocabulary():
    tree = ast.parse((ROOT / "audit" / "records.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    ours = {m for m in modules if m and m.startswith("audit")}
    assert ours == {"audit._validate", "audit.enums", "audit.mixture"}


def test_a_ceiling_is_violated_only_beyond_its_stated_error():
    c = Ceiling("eps_pair", 1.0, "exact", error=0.01)  # (a kind given by its value)
    assert c.kind is CeilingKind.PAIR and c.key == "eps_pair"
    assert not c.exceeded_by(1.005) and c.exceeded_by(1.02)
    assert not Ceiling(CeilingKind.THEORY, None).exceeded_by(100.0)  # n/a: never violated
    assert Ceiling(CeilingKind.AMPLIFIED_CLAIM, 0.5).key == "eps_theory"


def test_a_comparison_is_a_finding_and_a_claim_report_writes_its_batch_check():
    comp = Comparison(0.8, "per-release composed")
    assert comp.exceeded_by(0.81) and not comp.exceeded_by(0.8)
    check = BatchCheck("impl", dict.fromkeys(BATCH_TESTS, 0.5), 0.05, 100, 50, 0.1)
    assert check.passed and check.failed == ()
    bad = BatchCheck("impl", {**dict.fromkeys(BATCH_TESTS, 0.5), "law": 0.001}, 0.05, 100,
                     50, 0.1)
    assert bad.failed == ("law",) and not bad.passed  # 0.001 <= 0.05 / 3
    assert BatchCheck("impl", {}, 0.05, 1, 1, 0.0, nan_free=False).failed == BATCH_TESTS
    report = ClaimReport(1.0, 0.0, "note", "impl")
    assert "batch_check" not in report.to_dict()
    doc = ClaimReport(1.0, 0.0, "note", "impl", batch_check=bad).to_dict()
    assert doc["batch_check"]["failed"] == ["law"] and doc["batch_check"]["passed"] is False


def test_a_claim_validates_and_a_pilot_splits():
    assert Claim(1.0, 1e-6).delta == 1e-6
    with pytest.raises(ValueError, match=r"claim delta must be in \[0, 1\)"):
        Claim(1.0, 1.0)
    with pytest.raises(ValueError, match="claim epsilon"):
        Claim(-1.0)
    head, rest = Pilot(np.arange(5.0), np.arange(5.0) + 10).split(2)
    assert head.p.tolist() == [0.0, 1.0] and rest.q.tolist() == [12.0, 13.0, 14.0]
    assert Pilot(np.zeros((3, 2)), np.zeros((3, 2))).dim == 2
    assert Setting(0.3, 0.5, "MCAR", 2.0, 1.0).eps_mar_formula is None
