"""Plan files for `bound --plan` (audit.pipeline.plan_file)."""

from __future__ import annotations

import pytest

from audit.pipeline.plan_file import load_plan


def test_a_plan_file_is_read_and_bad_files_are_refused(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text('target_delta = 1e-5\n[[tables]]\nname = "survey"\np_star = 0.5\n'
                    'masks = "fresh"\n[[tables.releases]]\nnoise = "laplace"\nepsilon = 1.0\n'
                    'count = 3\n')
    plan = load_plan(path)
    assert plan.target_delta == 1e-5 and plan.tables[0].name == "survey"
    assert plan.tables[0].releases[0].count == 3
    with pytest.raises(ValueError, match="plan file not found"):
        load_plan(tmp_path / "missing.toml")
    path.write_text("target_delta = [")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_plan(path)
