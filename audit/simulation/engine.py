"""Streaming Monte Carlo engine: histograms of a statistic of A_D(z) and A_D(z').

``run_histograms(P, Q, statistic, trials, seed)`` draws ``trials`` outputs from each side
(trials are counted per side: a run draws A_D(z) ``trials`` times AND A_D(z') ``trials``
times), reduces each output to a statistic and counts it into fixed bins. Memory is flat in
``trials``: a kernel call keeps one histogram row per block it runs.

Reproducibility: the trials of each side are cut into blocks of ``block_trials``, each with
its own counter-seeded xoshiro256** stream (``audit.simulation.rng``). Counts are int64 sums of
block histograms, so the result is identical for any number of numba threads, joblib
workers, chunks or CPU backend, given (P, Q, statistic, trials, seed, block_trials). The
``cuda`` backend draws from the same streams; on a GPU its floating-point results may differ
from the CPU's in the last bits (libdevice and fused multiply-adds), so its counts can differ
from the CPU's by the rare draws within a few ulp of a bin edge (``audit.simulation.gpu``);
they too depend on those inputs only.

Parallelism: blocks of a kernel call run over numba threads (``prange``); chunks of blocks run
over joblib workers (``backend="loky"`` processes, ``"threading"`` threads running a serial
kernel that releases the GIL, or ``"dask"``), or on a GPU (``backend="cuda"``: one CUDA
thread per side and block, ``audit.simulation.gpu``). For dask, create a
``distributed.Client`` first (dask is an optional extra, ``pip install .[dask]``); the engine
then runs inside ``joblib.parallel_config(backend="dask")`` and joblib sends the chunks to
that client.
Workers are capped at the usable CPUs and the number of chunks, and never outlive the run's
process (``audit.simulation.processes``, shared with the black-box sampler). Importing this
module does not import numba: the kernels load when a run needs them.

Checkpoints: with ``checkpoint=DIR`` each finished chunk is saved to its own file, named by
a hash of every input that changes the counts and of the kernel code
(``audit.simulation.checkpoints``). Chunk boundaries depend on the number of blocks only, so
a rerun with the same inputs, whatever its workers, loads finished chunks instead of redoing
them: an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from audit._validate import check_positive_int
from audit.enums import Backend
from audit.laws import Law, ProductMixture, SubsetMixture
from audit.mixture import Mixture
from audit.noise import noise_of
from audit.simulation.checkpoints import (
    CODE_TAG,
    CUDA_CODE_TAG,
    ChunkStore,
    check_directory,
    run_hash,
)
from audit.simulation.planning import MAX_CHUNK_BLOCKS, Schedule, make_schedule
from audit.simulation.processes import (
    RegisteredBackend,
    ResourceCapWarning,
    check_jobs,
    parse_backend,
)
from audit.statistics import (
    ENGINE_PROJECTIONS,
    ExactLLR,
    LinearProjection,
    OutputValue,
    Statistic,
)

__all__ = [
    "HistogramCounts",
    "run_histograms",
    "default_edges",
    "sample_outputs",
    "project_outputs",
    "measure_rate",
    "check_backend",
    "BACKENDS",
    "provenance",
    "MAX_CHUNK_BLOCKS",
    "ResourceCapWarning",
]

BACKENDS = tuple(b.value for b in Backend)


@dataclass(frozen=True, eq=False)
class HistogramCounts:
    """Counts of one run. ``counts_p``/``counts_q`` (int64, len(edges) + 2): index 0 is the
    underflow bin (v < edges[0]), index i the bin [edges[i−1], edges[i]), index len(edges)
    the overflow bin (v >= edges[-1]), the last index the NaN bin (``audit.statistics``).
    ``trials`` is per side.

    ``workers`` (the joblib workers the run used; 1: the calling process) and ``notes`` (what
    the engine capped, for the caller to print) describe the execution, not the result: they
    are not part of :meth:`to_dict`.
    """

    edges: np.ndarray
    counts_p: np.ndarray
    counts_q: np.ndarray
    trials: int
    seed: int | None
    statistic: Statistic | None = None
    block_trials: int = 65536
    key: int = 0
    workers: int = 1
    notes: tuple[str, ...] = ()

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


# --------------------------------------------------------------------------- validation
def _check_mixture(name: str, M: object) -> Law:
    if not isinstance(M, Mixture | ProductMixture | SubsetMixture):
        raise ValueError(f"{name} must be an output law (audit.mixture.Mixture, or "
                         f"audit.laws.ProductMixture or SubsetMixture), got {name}={M!r}")
    return M


def _check_laws(P: object, Q: object, statistic: object) -> tuple[Law, Law]:
    """P and Q as laws of one noise kind and dimension that ``statistic`` can project."""
    P = _check_mixture("P", P)
    Q = _check_mixture("Q", Q)
    if P.noise is not Q.noise:
        raise ValueError(
            f"P and Q must have the same noise, got {P.noise.value!r} and {Q.noise.value!r}"
        )
    if P.dim != Q.dim:
        raise ValueError(f"P and Q must have the same output dim, got {P.dim} and {Q.dim}")
    if not isinstance(statistic, Statistic):
        raise ValueError(f"statistic must be an audit.statistics.Statistic, got "
                         f"statistic={statistic!r}")
    proj = statistic.projection
    if not isinstance(proj, ENGINE_PROJECTIONS):  # the others, a user's own included
        raise ValueError(f"statistic.projection must be one of "
                         f"{', '.join(c.__name__ for c in ENGINE_PROJECTIONS)} (what the kernels "
                         f"count; Statistic.counts counts any other in numpy), got a "
                         f"{type(proj).__name__}")
    if isinstance(proj, OutputValue) and not P.is_scalar:
        raise ValueError(
            f"an OutputValue statistic needs scalar outputs, got dim={P.dim}; use an "
            "ExactLLR or LinearProjection statistic"
        )
    if isinstance(proj, ExactLLR) and (proj.P.noise is not P.noise or proj.P.dim != P.dim):
        raise ValueError("the ExactLLR laws must have the sampled laws' noise and dimension")
    if isinstance(proj, LinearProjection) and proj.weights.shape[0] != P.dim:
        raise ValueError(
            f"LinearProjection weights must have length dim={P.dim}, got "
            f"{proj.weights.shape[0]}"
        )
    return P, Q


def check_backend(backend: object) -> Backend | RegisteredBackend:
    """``backend`` as a member, or as a joblib backend registered by name
    (:func:`audit.simulation.processes.parse_backend`), refused (one-line ``ValueError``) where
    it cannot run here: a name joblib does not know, dask without its extra, cuda without
    numba-cuda or a device."""
    backend = parse_backend(backend)
    if backend is Backend.DASK:
        try:
            import distributed  # noqa: F401
        except ImportError:  # pragma: no cover
            msg = "backend='dask' needs the optional extra: pip install .[dask]"
            raise ValueError(msg) from None
    elif backend is Backend.CUDA:
        from audit.simulation.gpu import unavailable

        why = unavailable()
        if why is not None:
            raise ValueError(why)
    return backend


def _check_chunk_blocks(chunk_blocks: object) -> int | None:
    if chunk_blocks is None:
        return None
    chunk_blocks = check_positive_int(chunk_blocks, "chunk_blocks")
    if chunk_blocks > MAX_CHUNK_BLOCKS:
        raise ValueError(
            f"chunk_blocks must be in [1, {MAX_CHUNK_BLOCKS}], got chunk_blocks={chunk_blocks}"
        )
    return chunk_blocks


def _n_blocks(trials: object, block_trials: object, name: str = "trials"
              ) -> tuple[int, int, int]:
    """(trials, block_trials, number of blocks per side), checked; ``name`` names trials."""
    from audit.simulation.rng import MAX_BLOCKS

    trials = check_positive_int(trials, name)
    block_trials = check_positive_int(block_trials, "block_trials")
    n_blocks = -(-trials // block_trials)
    if n_blocks >= MAX_BLOCKS:
        raise ValueError(f"trials / block_trials must be < 2^48, got {n_blocks} blocks")
    return trials, block_trials, n_blocks


def _check_progress(progress: object, label: object) -> None:
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be a bool, got progress={progress!r}")
    if label is not None and not isinstance(label, str):
        raise ValueError(f"label must be a str or None, got label={label!r}")


def _seed_value(seed) -> int | None:
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool | np.bool_):
        return int(seed)
    if isinstance(seed, np.random.SeedSequence) and not seed.spawn_key:
        return int(seed.entropy) if isinstance(seed.entropy, int | np.integer) else None
    return None


# ----------------------------------------------------------------------------- public API
def run_histograms(P: Mixture, Q: Mixture, statistic: Statistic, trials: int, seed, *,
                   n_jobs: int = 1, threads: int | None = None, block_trials: int = 65536,
                   backend: Backend | RegisteredBackend | str = "loky",
                   checkpoint: str | os.PathLike | None = None, progress: bool = False,
                   chunk_blocks: int | None = None, label: str | None = None
                   ) -> HistogramCounts:
    """Histogram a statistic of ``trials`` draws from each of P and Q.

    Parameters
    ----------
    P, Q : Mixture
        Output laws of A_D(z) and A_D(z'): same noise kind and output dimension.
    statistic : audit.statistics.Statistic
        What is counted (OutputValue, ExactLLR or LinearProjection), with its fixed edges.
    trials : int
        Draws per side, ≥ 1.
    seed : int >= 0, SeedSequence or Generator
        Stream seed (``audit.simulation.rng.derive_key``).
    n_jobs : int
        joblib workers, ≥ 1 (or −1: all usable CPUs; with ``backend="dask"``, the client's
        workers). Capped at the usable CPUs (with one :class:`ResourceCapWarning`) and at the
        number of chunks (:func:`audit.simulation.processes.cap_workers`);
        ``HistogramCounts.workers`` is the value used, ``HistogramCounts.notes`` says why.
    threads : int or None
        numba threads per kernel call, ≥ 1. Default: numba's setting when the run stays in
        this process, 1 per worker otherwise (the ``threading`` backend always runs serial
        kernels).
    block_trials : int
        Trials per block, ≥ 1: the unit of reproducibility. Results depend on it.
    backend : Backend, RegisteredBackend or str
        Also any joblib backend registered by name (``processes.parse_backend``: the chunks
        go to it, same counts). ``"cuda"``: an NVIDIA GPU, from the calling process
        (``n_jobs`` and ``threads`` do not apply); needs the ``[cuda]`` extra and a device (or
        ``NUMBA_ENABLE_CUDASIM=1``). Same streams and draws as the CPU backends; on a GPU a
        draw may differ in its last bits (``audit.simulation.gpu``), so counts may differ by
        draws within a few ulp of a bin edge, and its checkpoint files are its own.
    checkpoint : path or None
        Directory for chunk files; created if missing.
    progress : bool
        Show a tqdm bar over chunks.
    chunk_blocks : int or None
        Blocks per chunk, in [1, 64]. Default: a function of the number of blocks only
        (``audit.simulation.planning``). Does not change the counts (only the checkpoint
        file names).
    label : str or None
        Description shown on the progress bar (e.g. ``"main run"``).

    Returns
    -------
    HistogramCounts

    Raises
    ------
    ValueError
        On any invalid input, before any sampling starts.
    """
    from audit.simulation.rng import derive_key

    P, Q = _check_laws(P, Q, statistic)
    trials, block_trials, n_blocks = _n_blocks(trials, block_trials)
    n_jobs = check_jobs(n_jobs, "n_jobs")
    if threads is not None:
        threads = check_positive_int(threads, "threads")
    backend = check_backend(backend)
    _check_progress(progress, label)
    ckdir = check_directory(checkpoint)
    chunk_blocks = _check_chunk_blocks(chunk_blocks)
    key = derive_key(seed)  # after the checks: a Generator seed is consumed here
    schedule = make_schedule(n_blocks, n_jobs=n_jobs, threads=threads, backend=backend,
                             chunk_blocks=chunk_blocks)
    store = None
    if ckdir is not None:
        tag = CUDA_CODE_TAG if backend is Backend.CUDA else CODE_TAG
        store = ChunkStore(ckdir, run_hash(P, Q, statistic, trials, key, block_trials, tag=tag),
                           statistic.n_bins, trials=trials, block_trials=block_trials)
    cp, cq = _count(P, Q, statistic, trials, block_trials, key, schedule, store,
                    label if progress else False)
    return HistogramCounts(statistic.edges, cp, cq, trials, _seed_value(seed), statistic,
                           block_trials, int(key), schedule.workers,
                           schedule.notes + _backend_notes(backend, statistic))


def _backend_notes(backend: Backend | RegisteredBackend, statistic: Statistic) -> tuple[str, ...]:
    """What the backend did differently from its usual way (for the caller to print)."""
    if backend is Backend.CUDA:
        from audit.simulation.gpu import SHARED_BYTES, uses_shared_memory

        if not uses_shared_memory(statistic.n_bins):
            return (f"{statistic.n_bins} histogram counters exceed the {SHARED_BYTES // 1024} "
                    "KiB of shared memory of a CUDA thread block: the GPU counted with global "
                    "atomics (slower, same counts)",)
    return ()


def _count(P: Mixture, Q: Mixture, statistic: Statistic, trials: int, block_trials: int,
           key: np.uint64, schedule: Schedule, store: ChunkStore | None,
           label: str | None | bool) -> tuple[np.ndarray, np.ndarray]:
    """Run the schedule; ``label`` False: no progress bar."""
    from audit.simulation.execution import Tally, execute
    from audit.simulation.kernels import spec_of

    bar = None
    if label is not False:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(schedule.plan), unit="chunk", desc=label, leave=False)
    tally = Tally(statistic.n_bins, store, bar)
    try:
        execute(schedule, spec_of(P, Q, statistic), key, trials, block_trials, tally)
    finally:
        if bar is not None:
            bar.close()
    return tally.counts_p, tally.counts_q


def provenance() -> dict[str, str]:
    """What decides the counts besides the inputs: the numba version and the kernel code.

    ``kernel_code`` is :data:`audit.simulation.checkpoints.CODE_TAG`, the digest of the
    stream and kernel sources. Reading them does not import numba.
    """
    from importlib.metadata import version

    return {"numba": version("numba"), "kernel_code": CODE_TAG}


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
        tail = noise_of(P.noise).negligible_tail
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
    of ``sample_outputs(P, T, s)`` equals ``run_histograms(P, Q, Statistic.output(e), T,
    s).counts_p``. Use seeds independent of the main run's for pilots.

    Returns
    -------
    ndarray
        Shape (n,) for a scalar mixture, else (n, dim).
    """
    from audit.simulation.kernels import Blocks, law_of, sample_blocks
    from audit.simulation.rng import derive_key

    M = _check_mixture("M", M)
    n, block_trials, n_blocks = _n_blocks(n, block_trials, "n")
    if side not in (0, 1):
        raise ValueError(f"side must be in {{0, 1}}, got side={side!r}")
    key = derive_key(seed)
    x = sample_blocks(Blocks(key, 0, n_blocks, n, block_trials), int(side), law_of(M))
    return x[:, 0] if M.is_scalar else x


def project_outputs(P: Law, Q: Law, statistic: Statistic, x: np.ndarray) -> np.ndarray:
    """The statistic of raw outputs ``x`` (rows), computed by the kernels exactly as a run
    computes it (an exact LLR through the laws' fast densities, in O(1) extra memory).

    ``P`` and ``Q`` are the sampled laws the statistic is checked against (as for
    :func:`run_histograms`).
    """
    from audit.simulation.kernels import project, spec_of

    P, Q = _check_laws(P, Q, statistic)
    return project(x, spec_of(P, Q, statistic))


def measure_rate(P: Law, Q: Law, statistic: Statistic, *, seconds: float = 0.05,
                 threads: int | None = None, backend: Backend | str = "loky") -> float:
    """Draws per second (both sides) of ``run_histograms`` on these laws on this machine,
    measured on a short warm run of about ``seconds`` (for expected durations): each timed run
    is sized from the previous one's rate to take about ``seconds``, growing at most 16-fold.

    ``backend="cuda"`` times runs of :data:`~.planning.CUDA_GROUP_BLOCKS` blocks (one launch
    that fills the device; 64 on the simulator), of 16 to 4096 trials each.
    """
    P, Q = _check_laws(P, Q, statistic)
    backend = check_backend(backend)
    blocks, kw = 0, {"threads": threads, "backend": backend}
    trials, last = 65_536, 1 << 26
    if backend is Backend.CUDA:
        from audit.simulation.gpu import simulated
        from audit.simulation.planning import CUDA_GROUP_BLOCKS

        blocks, kw = (64 if simulated() else CUDA_GROUP_BLOCKS), {"backend": backend}
        trials, last = 16 * blocks, 4096 * blocks
    run_histograms(P, Q, statistic, 1024, 0, **kw)  # compile or load the cache
    while True:
        bt = trials // blocks if blocks else 65_536
        t = time.perf_counter()
        run_histograms(P, Q, statistic, trials, 0, block_trials=bt, **kw)
        elapsed = time.perf_counter() - t
        if elapsed >= seconds or trials >= last:
            return 2.0 * trials / max(elapsed, 1e-9)
        grow = min(16.0, 1.25 * seconds / max(elapsed, 1e-9))
        trials = min(last, max(2 * trials, int(trials * grow)))
        if blocks:
            trials = max(blocks, trials // blocks * blocks)
