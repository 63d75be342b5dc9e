"""Progress bars (audit.pipeline.progress)."""

from __future__ import annotations

from audit.pipeline.progress import progress_bar


def test_a_bar_only_when_asked_labelled_and_sized():
    assert progress_bar(10, "audit: main run", False) is None
    bar = progress_bar(10, "audit: main run", True)
    try:
        assert bar.total == 10 and bar.desc == "audit: main run" and not bar.leave
    finally:
        bar.close()
