"""Checkpoint files of the Monte Carlo engine: one ``.npz`` per finished chunk of blocks.

With ``checkpoint=DIR``, chunk [b0, b1) of a run is saved as
``DIR/<run hash>_<b0:012d>_<b1:012d>.npz`` (arrays ``counts_p`` and ``counts_q``). The run
hash covers every input that changes the counts (both sampled laws, the statistic with its
edges, trials, the stream key, block_trials) and :data:`CODE_TAG`, a digest of the stream and
kernel sources (and of the jit options, ``jit.py``), so chunks written by other kernel code are
never reused. The digest reads the source files as text: importing this module does not import
numba. Chunk boundaries
depend only on the number of blocks (``audit.simulation.planning``), so a run resumed with
other workers or threads finds the files of the first.

Files are written atomically (a temporary file in the same directory, then ``os.replace``):
a killed run leaves whole chunk files or none. A file that cannot be read or has the wrong
shape is treated as missing and its chunk is recomputed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from audit.laws import Law
from audit.statistics import Statistic

__all__ = ["CODE_TAG", "CUDA_CODE_TAG", "code_tag", "run_hash", "check_directory",
           "ChunkStore", "save_arrays", "load_arrays"]

#: The modules whose source decides the draws and their binning (jit.py: the compile options).
_CODE_FILES = ("jit.py", "rng.py", "packing.py", "densities.py", "kernels.py")


def code_tag(files: tuple[str, ...] = _CODE_FILES) -> str:
    """sha256 (16 hex digits) of the source text of ``files`` in this package."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in files:
        h.update(name.encode())
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


#: Digest of the stream and kernel sources, computed once at import.
CODE_TAG = code_tag()
#: The tag of runs of the ``cuda`` backend: its kernel's sources too, and a name of its own.
#: GPU draws may differ from the CPU's in their last bits (``audit.simulation.gpu``), so the
#: chunks of the two backends are never mixed in one run.
CUDA_CODE_TAG = "cuda-" + code_tag(_CODE_FILES + ("gpu.py", "gpu_kernel.py"))


def run_hash(P: Law, Q: Law, statistic: Statistic, trials: int, key: int,
             block_trials: int, *, tag: str = CODE_TAG) -> str:
    """The 20-hex-digit name prefix of a run's chunk files."""
    h = hashlib.sha256()
    for M in (P, Q):
        h.update(type(M).__name__.encode())
        for a in M.arrays():
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        h.update(f"{M.noise.value}|{M.scale!r}|{M.dim}".encode())
    h.update(json.dumps(statistic.to_dict(), sort_keys=True).encode())
    h.update(f"{int(trials)}|{int(key)}|{int(block_trials)}|{tag}".encode())
    return h.hexdigest()[:20]


def check_directory(checkpoint: str | os.PathLike | None) -> Path | None:
    """``checkpoint`` as a Path (or None); refuses an existing path that is not a directory."""
    if checkpoint is None:
        return None
    if not isinstance(checkpoint, str | os.PathLike):
        raise ValueError(f"checkpoint must be a directory path or None, got "
                         f"checkpoint={checkpoint!r}")
    path = Path(checkpoint)
    if path.exists() and not path.is_dir():
        raise ValueError(f"checkpoint must be a directory, got checkpoint={str(path)!r}")
    return path


class ChunkStore:
    """The chunk files of one run in ``directory`` (created if missing).

    Parameters
    ----------
    directory : Path
    run_hash : str
        See :func:`run_hash`.
    n_bins : int
        Counters per side, ``len(edges) + 2``: files of another shape are ignored.
    """

    def __init__(self, directory: Path, run_hash: str, n_bins: int) -> None:
        self.directory = Path(directory)
        self.run_hash = run_hash
        self.n_bins = int(n_bins)
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, b0: int, b1: int) -> Path:
        return self.directory / f"{self.run_hash}_{b0:012d}_{b1:012d}.npz"

    def load(self, b0: int, b1: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The counts of chunk [b0, b1), or None if it has no whole, well-shaped file."""
        arrays = load_arrays(self.path(b0, b1), ("counts_p", "counts_q"))
        if arrays is None:
            return None  # no file, or a torn or foreign one: recompute the chunk
        cp, cq = arrays["counts_p"], arrays["counts_q"]
        if cp.shape != (self.n_bins,) or cq.shape != (self.n_bins,):
            return None
        return cp.astype(np.int64), cq.astype(np.int64)

    def save(self, b0: int, b1: int, cp: np.ndarray, cq: np.ndarray) -> None:
        """Write chunk [b0, b1) atomically: a temporary file, then ``os.replace``."""
        save_arrays(self.path(b0, b1), counts_p=cp, counts_q=cq)


def save_arrays(path: Path, **arrays: np.ndarray) -> None:
    """Write an ``.npz`` atomically (a temporary file in the same folder, fsync, then
    ``os.replace``): a reader finds the whole file or none."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_arrays(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The named arrays of an ``.npz``, or None when it is missing, torn or foreign."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path) as f:
            return {name: f[name] for name in names}
    except (OSError, KeyError, ValueError, EOFError):
        return None
