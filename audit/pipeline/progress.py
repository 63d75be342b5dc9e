"""Labelled progress bars over a run's chunks (tqdm), or none."""

from __future__ import annotations

__all__ = ["progress_bar"]


def progress_bar(total: int, label: str, progress: bool):
    """A tqdm bar of ``total`` chunks labelled ``label`` (not left on screen), or None when
    ``progress`` is off."""
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="chunk", leave=False)
