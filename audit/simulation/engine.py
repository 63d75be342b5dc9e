"""Streaming Monte Carlo engine: histograms of a statistic of A_D(z) and A_D(z').

``run_histograms(P, Q, statistic, trials, seed)`` draws ``trials`` outputs from each side
(trials are counted per side: a run draws A_D(z) ``trials`` times AND A_D(z') ``trials``
times), reduces each output to a statistic and counts it into fixed bins. Memory is flat in
``trials``: the kernel keeps one histogram row per block of the current chunk.

Reproducibility: the trials of each side are cut into blocks of ``block_trials``, each with
its own counter-seeded xoshiro256** stream (``audit.simulation.rng``). Counts are int64 sums of block
histograms, so the result is identical for any number of numba threads, joblib workers,
chunks or backend, given (P, Q, statistic, trials, seed, block_trials).

Parallelism: blocks of a chunk run over numba threads (``prange``); chunks run over joblib
workers (``backend="loky"`` processes, ``"threading"`` threads running a serial kernel that
releases the GIL, or ``"dask"``). For dask, create a ``distributed.Client`` first (dask is an
optional extra, ``pip install .[dask]``); the engine then runs inside
``joblib.parallel_config(backend="dask")`` and joblib sends the chunks to that client.

Checkpoints: with ``checkpoint=DIR`` each finished chunk is saved as
``DIR/<hash>_<first block>_<end block>.npz``, the hash covering every input that changes the
counts. A rerun with the same inputs and chunking loads finished chunks instead of redoing
them, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audit._validate import check_positive_int
from audit.mixture import Mixture, NoiseKind
from audit.statistics import ExactLLR, LinearProjection, OutputValue, Statistic

__all__ = [
    "HistogramCounts",
    "run_histograms",
    "default_edges",
    "sample_outputs",
    "BACKENDS",
]

BACKENDS = ("loky", "threading", "dask")
#: Upper bound on the blocks one kernel call (one chunk) handles: bounds memory per call.
MAX_CHUNK_BLOCKS = 64


@dataclass(frozen=True, eq=False)
class HistogramCounts:
    """Counts of one run. ``counts_p``/``counts_q`` (int64, len(edges) + 1): index 0 is the
    underflow bin (v < edges[0]), index i the bin [edges[i−1], edges[i]), the last index the
    overflow bin (v >= edges[-1]). ``trials`` is per side."""

    edges: np.ndarray
    counts_p: np.ndarray
    counts_q: np.ndarray
    trials: int
    seed: int | None
    statistic: Statistic | None = None
    block_trials: int = 65536
    key: int = 0

    def to_dict(self) -> dict:
        return {
            "edges": np.asarray(self.edges).tolist(),
            "counts_p": np.asarray(self.counts_p).tolist(),
            "counts_q": np.asarray(self.counts_q).tolist(),
            "trials": int(self.trials),
            "seed": None if self.seed is None else int(self.seed),
            "statistic": None if self.statistic is None else self.statistic.to_dict(),
            "block_trials": int(self.block_trials),
            "key": int(self.key),
        }


# ------------------------------------------------------------------------------- helpers
def _check_mixture(name: str, M: object) -> Mixture:
    if hasattr(M, "as_mixture"):  # TEMPORARY until the kernels sample structured laws
        M = M.as_mixture()
    if not isinstance(M, Mixture):
        raise ValueError(f"{name} must be an audit.mixture.Mixture, got {name}={M!r}")
    return M


def _pack(M: Mixture) -> tuple:
    from audit.simulation.kernels import alias_table

    M = _check_mixture("law", M)
    prob, alias = alias_table(M.weights)
    return (prob, alias, np.ascontiguousarray(M.shifts, dtype=np.float64),
            np.ascontiguousarray(np.log(M.weights)), float(M.scale))


def _noise_code(M: Mixture) -> int:
    from audit.simulation.kernels import NOISE_GAUSSIAN, NOISE_LAPLACE

    return NOISE_LAPLACE if M.noise is NoiseKind.LAPLACE else NOISE_GAUSSIAN


def _mode(statistic: Statistic, P: Mixture) -> tuple[int, np.ndarray, float, tuple, tuple]:
    """Kernel mode, linear weights and offset, and the packed laws of an LLR statistic."""
    from audit.simulation.kernels import MODE_LINEAR, MODE_LLR, MODE_OUTPUT

    if not isinstance(statistic, Statistic):
        raise ValueError(f"statistic must be an audit.statistics.Statistic, got "
                         f"statistic={statistic!r}")
    proj = statistic.projection
    kp = kq = _pack(P)
    if isinstance(proj, OutputValue):
        if not P.is_scalar:
            raise ValueError(
                f"an OutputValue statistic needs scalar outputs, got dim={P.dim}; use an "
                "ExactLLR or LinearProjection statistic"
            )
        return MODE_OUTPUT, np.zeros(1), 0.0, kp, kq
    if isinstance(proj, ExactLLR):
        if proj.P.noise is not P.noise or proj.P.dim != P.dim:
            raise ValueError("the ExactLLR laws must have the sampled laws' noise and dimension")
        return MODE_LLR, np.zeros(1), 0.0, _pack(proj.P), _pack(proj.Q)
    if isinstance(proj, LinearProjection):
        if proj.weights.shape[0] != P.dim:
            raise ValueError(
                f"LinearProjection weights must have length dim={P.dim}, got "
                f"{proj.weights.shape[0]}"
            )
        return MODE_LINEAR, proj.weights, proj.offset, kp, kq
    raise ValueError(f"unknown projection {proj!r}")  # pragma: no cover - Statistic checks


def _seed_value(seed) -> int | None:
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool | np.bool_):
        return int(seed)
    if isinstance(seed, np.random.SeedSequence) and not seed.spawn_key:
        return int(seed.entropy) if isinstance(seed.entropy, int | np.integer) else None
    return None


def _run_hash(P, Q, statistic, trials, key, block_trials) -> str:
    h = hashlib.sha256()
    for M in (P, Q):
        h.update(np.ascontiguousarray(M.weights).tobytes())
        h.update(np.ascontiguousarray(M.shifts).tobytes())
        h.update(f"{M.noise.value}|{M.scale!r}|{M.dim}".encode())
    h.update(json.dumps(statistic.to_dict(), sort_keys=True).encode())
    # Bump the tag whenever the streams or kernels change, so old chunks are never reused.
    h.update(f"{trials}|{int(key)}|{block_trials}|v2".encode())
    return h.hexdigest()[:20]


def _chunk_job(key, b0, b1, trials, block_trials, kp, kq, lp, lq, noise, mode, w, c, edges,
               threads, parallel):
    """One chunk of blocks, run in the caller or a worker; returns (counts_p, counts_q)."""
    import numba

    from audit.simulation.kernels import hist_blocks

    if parallel and threads is not None:
        old = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            return hist_blocks(key, b0, b1, trials, block_trials, kp, kq, lp, lq, noise, mode, w, c,
                               edges, parallel=True)
        finally:
            numba.set_num_threads(old)
    return hist_blocks(key, b0, b1, trials, block_trials, kp, kq, lp, lq, noise, mode, w, c, edges,
                       parallel=parallel)


def _save_chunk(path: Path, cp: np.ndarray, cq: np.ndarray) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npz")
    np.savez(tmp, counts_p=cp, counts_q=cq)
    os.replace(tmp, path)


def _load_chunk(path: Path, nbins: int):
    try:
        with np.load(path) as f:
            cp, cq = f["counts_p"], f["counts_q"]
    except (OSError, KeyError, ValueError):
        return None  # a torn or foreign file: recompute the chunk
    if cp.shape != (nbins,) or cq.shape != (nbins,):
        return None
    return cp.astype(np.int64), cq.astype(np.int64)


# ----------------------------------------------------------------------------- public API
def run_histograms(P: Mixture, Q: Mixture, statistic, trials: int, seed, *, n_jobs: int = 1,
                   threads: int | None = None, block_trials: int = 65536,
                   backend: str = "loky", checkpoint: str | os.PathLike | None = None,
                   progress: bool = False, chunk_blocks: int | None = None) -> HistogramCounts:
    """Histogram a statistic of ``trials`` draws from each of P and Q.

    Parameters
    ----------
    P, Q : Mixture
        Output laws of A_D(z) and A_D(z'): same noise kind and output dimension.
    statistic : OutputStatistic, LLRStatistic or LinearStatistic
        What is counted, with its fixed bin edges.
    trials : int
        Draws per side, ≥ 1.
    seed : int >= 0, SeedSequence or Generator
        Stream seed (``audit.simulation.rng.derive_key``).
    n_jobs : int
        joblib workers, ≥ 1 (or −1: all CPUs; with ``backend="dask"``, the client's workers).
    threads : int or None
        numba threads per chunk, ≥ 1. Default: numba's default with ``n_jobs == 1``, 1 per
        worker otherwise (the ``threading`` backend always runs serial kernels).
    block_trials : int
        Trials per block, ≥ 1: the unit of reproducibility. Results depend on it.
    backend : {"loky", "threading", "dask"}
    checkpoint : path or None
        Directory for chunk files; created if missing.
    progress : bool
        Show a tqdm bar over chunks.
    chunk_blocks : int or None
        Blocks per chunk, in [1, 64]. Default: an even split over the workers, at most 64.
        Does not change the counts (only the checkpoint file names).

    Returns
    -------
    HistogramCounts

    Raises
    ------
    ValueError
        On any invalid input, before any sampling starts.
    """
    from audit.simulation.rng import MAX_BLOCKS, derive_key

    P = _check_mixture("P", P)
    Q = _check_mixture("Q", Q)
    if P.noise is not Q.noise:
        raise ValueError(
            f"P and Q must have the same noise, got {P.noise.value!r} and {Q.noise.value!r}"
        )
    if P.dim != Q.dim:
        raise ValueError(f"P and Q must have the same output dim, got {P.dim} and {Q.dim}")
    mode, w, c, lp, lq = _mode(statistic, P)
    trials = check_positive_int(trials, "trials")
    block_trials = check_positive_int(block_trials, "block_trials")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or (
        n_jobs < 1 and n_jobs != -1
    ):
        raise ValueError(f"n_jobs must be an integer >= 1 or -1, got n_jobs={n_jobs!r}")
    n_jobs = int(n_jobs)
    if threads is not None:
        threads = check_positive_int(threads, "threads")
    if backend not in BACKENDS:
        allowed = ", ".join(repr(b) for b in BACKENDS)
        raise ValueError(f"backend must be one of {allowed}, got backend={backend!r}")
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be a bool, got progress={progress!r}")
    n_blocks = -(-trials // block_trials)
    if n_blocks >= MAX_BLOCKS:
        raise ValueError(f"trials / block_trials must be < 2^48, got {n_blocks} blocks")
    workers = os.cpu_count() or 1 if n_jobs == -1 else n_jobs
    if chunk_blocks is None:
        chunk_blocks = max(1, min(MAX_CHUNK_BLOCKS, -(-n_blocks // max(workers, 1))))
    else:
        chunk_blocks = check_positive_int(chunk_blocks, "chunk_blocks")
        if chunk_blocks > MAX_CHUNK_BLOCKS:
            raise ValueError(
                f"chunk_blocks must be in [1, {MAX_CHUNK_BLOCKS}], got chunk_blocks={chunk_blocks}"
            )
    ckdir = None
    if checkpoint is not None:
        ckdir = Path(checkpoint)
        if ckdir.exists() and not ckdir.is_dir():
            raise ValueError(f"checkpoint must be a directory, got checkpoint={str(ckdir)!r}")
    if backend == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:  # pragma: no cover
            msg = "backend='dask' needs the optional extra: pip install .[dask]"
            raise ValueError(msg) from None
    key = derive_key(seed)  # after the checks: a Generator seed is consumed here

    edges = statistic.edges
    nbins = edges.shape[0] + 1
    kp, kq = _pack(P), _pack(Q)
    noise = _noise_code(P)
    chunks = [(b, min(b + chunk_blocks, n_blocks)) for b in range(0, n_blocks, chunk_blocks)]
    total_p = np.zeros(nbins, dtype=np.int64)
    total_q = np.zeros(nbins, dtype=np.int64)
    run_hash = _run_hash(P, Q, statistic, trials, key, block_trials)
    pending = []
    for b0, b1 in chunks:
        loaded = None
        if ckdir is not None:
            path = ckdir / f"{run_hash}_{b0:012d}_{b1:012d}.npz"
            if path.is_file():
                loaded = _load_chunk(path, nbins)
        if loaded is None:
            pending.append((b0, b1))
        else:
            total_p += loaded[0]
            total_q += loaded[1]
    if ckdir is not None:
        ckdir.mkdir(parents=True, exist_ok=True)

    parallel_kernel = backend != "threading"
    per_chunk_threads = threads if (threads is not None or n_jobs == 1) else 1
    args = (trials, block_trials, kp, kq, lp, lq, noise, mode, w, c, edges, per_chunk_threads,
            parallel_kernel)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(chunks), initial=len(chunks) - len(pending), unit="chunk")

    def consume(results):
        nonlocal total_p, total_q
        for (b0, b1), (cp, cq) in zip(pending, results, strict=True):
            if ckdir is not None:
                _save_chunk(ckdir / f"{run_hash}_{b0:012d}_{b1:012d}.npz", cp, cq)
            total_p += cp
            total_q += cq
            if bar is not None:
                bar.update(1)

    try:
        if pending and n_jobs == 1 and backend != "dask":
            consume(_chunk_job(key, b0, b1, *args) for b0, b1 in pending)
        elif pending:
            import joblib

            if backend == "loky":
                # Compile (or load the cache) once here so workers load cached kernels.
                _chunk_job(key, 0, 0, *args)
            with joblib.parallel_config(backend=backend):
                par = joblib.Parallel(n_jobs=n_jobs, return_as="generator")
                consume(par(joblib.delayed(_chunk_job)(key, b0, b1, *args)
                            for b0, b1 in pending))
    finally:
        if bar is not None:
            bar.close()
    return HistogramCounts(edges, total_p, total_q, trials, _seed_value(seed), statistic,
                           block_trials, int(key))


def default_edges(P: Mixture, Q: Mixture, n_bins: int = 1000, *, tail: float | None = None
                  ) -> np.ndarray:
    """Fixed uniform bin edges for a scalar output, chosen before any sampling.

    Covers [min shift − t·scale, max shift + t·scale] of both mixtures, with t = 25 for
    Laplace (tail mass e^{−25}/2 ≈ 7e−12 per side) and t = 7 for Gaussian (≈ 1.3e−12).
    Draws outside land in the underflow/overflow bins.

    Parameters
    ----------
    P, Q : Mixture
        Scalar mixtures.
    n_bins : int
        Number of finite bins, ≥ 1 (len(edges) = n_bins + 1).
    tail : float, optional
        Overrides t (noise scales beyond the extreme shifts), > 0.
    """
    P = _check_mixture("P", P)
    Q = _check_mixture("Q", Q)
    if not (P.is_scalar and Q.is_scalar):
        raise ValueError(f"default_edges needs scalar mixtures, got dims {P.dim} and {Q.dim}")
    n_bins = check_positive_int(n_bins, "n_bins")
    if tail is None:
        tail = 25.0 if P.noise is NoiseKind.LAPLACE else 7.0
    elif not (isinstance(tail, int | float) and math.isfinite(tail) and tail > 0):
        raise ValueError(f"tail must be in (0, inf), got tail={tail!r}")
    scale = max(P.scale, Q.scale)
    lo = min(P.scalar_shifts.min(), Q.scalar_shifts.min()) - tail * scale
    hi = max(P.scalar_shifts.max(), Q.scalar_shifts.max()) + tail * scale
    return np.linspace(lo, hi, n_bins + 1)


def sample_outputs(M: Mixture, n: int, seed, *, side: int = 0,
                   block_trials: int = 65536) -> np.ndarray:
    """Raw draws of a mixture through the engine's kernels (for pilots).

    The draws are exactly the first ``n`` outputs of stream ``side`` of ``seed``: a histogram
    of ``sample_outputs(P, T, s)`` equals ``run_histograms(P, Q, OutputStatistic(e), T,
    s).counts_p``. Use seeds independent of the main run's for pilots.

    Returns
    -------
    ndarray
        Shape (n,) for a scalar mixture, else (n, dim).
    """
    from audit.simulation.kernels import sample_blocks
    from audit.simulation.rng import derive_key

    M = _check_mixture("M", M)
    n = check_positive_int(n, "n")
    block_trials = check_positive_int(block_trials, "block_trials")
    if side not in (0, 1):
        raise ValueError(f"side must be in {{0, 1}}, got side={side!r}")
    key = derive_key(seed)
    prob, alias, shifts, _, scale = _pack(M)
    x = sample_blocks(key, side, 0, -(-n // block_trials), n, block_trials, prob, alias, shifts,
                      scale, _noise_code(M))
    return x[:, 0] if M.is_scalar else x
