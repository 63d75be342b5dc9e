"""Masks drawn by stratum for a stratified implementation audit (docs/THEORY.md §8.5).

Under MCAR iid the number of masked entries M of a dataset with N maskable (non-NaN) entries
is Binomial(N, π), and given M = m the masked set is a uniformly random m-subset of them.
:class:`SubsetMasks` draws that conditional law (stratum m) directly: it is the
``missingness`` of a one-sided :class:`audit.simulation.callables.CallableRun`, so a stratum
runs in the same reproducible chunks, workers and checkpoints as any black-box run, and its
kind and parameters (the stratum, the dataset size) enter the run's digest.
:func:`run_key` derives one independent key per (part of the audit, side, stratum or rate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit._validate import check_positive_int

__all__ = ["SubsetMasks", "run_key", "maskable_entries"]


def maskable_entries(data: np.ndarray) -> int:
    """The entries of ``data`` a mechanism can mask (those not already NaN)."""
    return int(np.count_nonzero(~np.isnan(np.asarray(data, dtype=np.float64))))


def run_key(key: int, part: int, side: int, index: int) -> int:
    """A 63-bit key of one run of a stratified audit: ``part`` (0/1: the pilot's halves, 2: the
    main run by stratum, 3: the main run by rate), ``side`` (0: z, 1: z'), ``index`` (the
    stratum m or the rate's position), independent for every distinct tuple."""
    for name, v in (("part", part), ("side", side), ("index", index)):
        check_positive_int(v, name, minimum=0)
    seq = np.random.SeedSequence(int(key), spawn_key=(3, int(part), int(side), int(index)))
    return int(seq.generate_state(1, np.uint64)[0] >> np.uint64(1))


@dataclass(frozen=True)
class SubsetMasks:
    """Masks of stratum ``masked`` = m: in each dataset of ``n`` records, a uniformly random
    m-subset of the entries not already NaN is masked (True = missing), the rest kept.

    ``sample_masks(records, rng)`` takes the records of one or more datasets stacked (shape
    (calls · n, d), as the batched sampler tiles them) and returns masks of that shape.
    """

    masked: int
    n: int
    kind: ClassVar[str] = "stratum-missing-count"

    def __post_init__(self) -> None:
        check_positive_int(self.masked, "masked", minimum=0)
        check_positive_int(self.n, "n")

    def params(self) -> dict:
        return {"masked": self.masked, "n": self.n}

    def sample_masks(self, records: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One mask per entry; each dataset's m masked entries a uniform m-subset of its
        non-NaN entries (the first m of a random permutation of them)."""
        x = np.asarray(records, dtype=np.float64)
        if x.ndim != 2 or x.shape[0] % self.n:
            raise ValueError(f"records must have shape (calls * {self.n}, d), got "
                             f"shape {x.shape}")
        calls = x.shape[0] // self.n
        flat = x.reshape(calls, -1)
        open_ = ~np.isnan(flat)
        if np.any(open_.sum(axis=1) < self.masked):
            raise ValueError(f"masked={self.masked} exceeds the {int(open_.sum(axis=1).min())} "
                             "maskable entries of a dataset")
        keys = np.where(open_, rng.random(flat.shape), np.inf)  # NaN entries sort last
        order = np.argsort(keys, axis=1, kind="stable")[:, :self.masked]
        masks = np.zeros(flat.shape, dtype=bool)
        np.put_along_axis(masks, order, True, axis=1)
        return masks.reshape(x.shape)
