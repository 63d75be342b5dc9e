"""audit.pipeline.factory: the one place that tells a model audit from an implementation's."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import config_from_dict
from audit.pipeline.factory import make_subject
from audit.pipeline.implementation import ImplementationSubject
from audit.pipeline.model_subject import ModelSubject
from tests.conftest import ROOT, audit_doc


def _sum(data, rng):
    return np.nan_to_num(data).sum() + rng.laplace(scale=6.0)


def test_the_config_decides_unless_an_object_or_plan_is_given():
    doc = audit_doc(**{"scenario.d": 3, "scenario.n": 5, "audit.attack": "density-ratio"})
    assert isinstance(make_subject(config_from_dict(doc)), ModelSubject)
    impl = CallableImplementation(_sum, Claim(1.0, 0.0, "t"), "s")
    assert isinstance(make_subject(config_from_dict(doc), implementation=impl),
                      ImplementationSubject)
    doc["implementation"] = {"target": "tests.adapters.example_mechanisms:noisy_sum",
                             "epsilon": 1.0, "params": {"bound": 1.0, "scale": 6.0}}
    assert isinstance(make_subject(config_from_dict(doc)), ImplementationSubject)
    with pytest.raises(ValueError, match="needs a config"):
        make_subject()


def test_no_other_pipeline_module_asks_whether_a_config_holds_an_implementation():
    """Only the factory, the config that parses it and the parts' check of a config (which
    target kinds it may have) read ``cfg.implementation``."""
    # the subject reads its table
    allowed = {"factory.py", "config.py", "implementation.py", "parts.py"}
    offenders = []
    for path in sorted((ROOT / "audit").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr == "implementation"
                    and isinstance(node.value, ast.Name) and node.value.id == "cfg"
                    and Path(path).name not in allowed):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
