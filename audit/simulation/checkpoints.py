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
a killed run leaves whole chunk files or none. Every file is checked when it is read (whole
and readable, the right arrays, the right shapes; the engine's counts non-negative and summing
to the chunk's trials on each side): a bad file is never used, its chunk is recomputed and
overwritten, with one :class:`CheckpointWarning` naming the file and what is wrong with it.
A write that fails (a full disk) raises :class:`CheckpointWriteError`, which says how many
finished chunks of the run are on disk.

The black-box sampler (``audit.simulation.callables``) keys its files also by the code of the
implementation (:func:`code_digest`): fixing a mechanism and rerunning never reuses the
outputs of the old code. :func:`count_chunk_files` counts one run's files in a folder that
holds others; :func:`run_prefixes` names the runs this process opened in a folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import json
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from audit.laws import Law
from audit.statistics import Statistic
from audit.ties import binning_edges

__all__ = ["CODE_TAG", "CUDA_CODE_TAG", "CheckpointWarning", "CheckpointWriteError",
           "code_tag", "run_hash", "check_directory", "ChunkStore", "save_arrays",
           "read_chunk", "write_chunk", "count_chunk_files", "run_prefixes",
           "record_prefix", "code_digest", "DIGEST_STRENGTHS"]


class CheckpointWarning(UserWarning):
    """A chunk file that could not be used (torn, foreign, wrong shape or counts): its chunk
    is recomputed."""


class CheckpointWriteError(OSError):
    """A chunk file could not be written (a full disk, no permission): the run stops.

    ``directory``: the checkpoint folder; ``saved``: the finished chunks of the run on disk
    (read back or written) when the write failed; ``errno``: the OS error number (or None).
    """

    def __init__(self, message: str, directory: str = "", saved: int = 0,
                 errno: int | None = None) -> None:
        super().__init__(message)
        self.directory = str(directory)
        self.saved = int(saved)
        self.errno = errno

    def __reduce__(self):
        return type(self), (str(self), self.directory, self.saved, self.errno)

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
    # the edges the kernels bin against (the tie rule of audit.statistics lives outside the
    # files of CODE_TAG)
    h.update(np.ascontiguousarray(binning_edges(statistic.edges), dtype=np.float64).tobytes())
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
        Counters per side, ``len(edges) + 2``.
    trials, block_trials : int or None
        The run's trials per side and trials per block: with both, a file is used only when
        each side's counts sum to the trials of its chunk.

    ``kept`` counts the finished chunks of the run on disk (read back or written).
    """

    def __init__(self, directory: Path, run_hash: str, n_bins: int, *,
                 trials: int | None = None, block_trials: int | None = None) -> None:
        self.directory = Path(directory)
        self.run_hash = run_hash
        self.n_bins = int(n_bins)
        self.trials = None if trials is None else int(trials)
        self.block_trials = None if block_trials is None else int(block_trials)
        self.kept = 0
        self.directory.mkdir(parents=True, exist_ok=True)
        record_prefix(self.directory, run_hash)

    def path(self, b0: int, b1: int) -> Path:
        return self.directory / f"{self.run_hash}_{b0:012d}_{b1:012d}.npz"

    def chunk_trials(self, b0: int, b1: int) -> int | None:
        """Trials per side of blocks [b0, b1) (None without the run's sizes)."""
        if self.trials is None or self.block_trials is None:
            return None
        return min(b1 * self.block_trials, self.trials) - min(b0 * self.block_trials,
                                                             self.trials)

    def load(self, b0: int, b1: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The counts of chunk [b0, b1), or None if it has no file or a bad one (warned)."""
        want = self.chunk_trials(b0, b1)

        def check(arrays: dict[str, np.ndarray]) -> str | None:
            for name, a in arrays.items():
                if a.shape != (self.n_bins,):
                    return f"{name} has shape {a.shape}, expected ({self.n_bins},)"
                if a.dtype.kind not in "iu":
                    return f"{name} has dtype {a.dtype}, expected integer counts"
                if (a < 0).any():
                    return f"{name} has negative counts"
                if want is not None and int(a.sum()) != want:
                    return (f"{name} sums to {int(a.sum())}, expected the chunk's {want} "
                            "trials")
            return None

        arrays = read_chunk(self.path(b0, b1), ("counts_p", "counts_q"), check)
        if arrays is None:
            return None
        self.kept += 1
        return arrays["counts_p"].astype(np.int64), arrays["counts_q"].astype(np.int64)

    def save(self, b0: int, b1: int, cp: np.ndarray, cq: np.ndarray) -> None:
        """Write chunk [b0, b1) atomically: a temporary file, then ``os.replace``.

        Raises
        ------
        CheckpointWriteError
            When the file cannot be written.
        """
        write_chunk(self.path(b0, b1), self.kept, counts_p=cp, counts_q=cq)
        self.kept += 1


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


def write_chunk(path: Path, saved: int, **arrays: np.ndarray) -> None:
    """:func:`save_arrays`, an OS error raised as :class:`CheckpointWriteError` (``saved``:
    the run's finished chunks already on disk, for its message)."""
    path = Path(path)
    try:
        save_arrays(path, **arrays)
    except OSError as exc:
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        unit = "chunk was" if saved == 1 else "chunks were"
        raise CheckpointWriteError(
            f"checkpoint folder {path.parent}: {reason} after {saved} finished {unit} saved "
            f"(writing {path.name} failed)", str(path.parent), saved, exc.errno) from exc


def read_chunk(path: Path, names: tuple[str, ...], check=None
               ) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` of the chunk file ``path``, checked; None when there is no file,
    and None with one :class:`CheckpointWarning` for a file that cannot be used.

    The file must be a readable ``.npz`` holding exactly ``names``; ``check(arrays)``, when
    given, returns None for good arrays or a sentence saying what is wrong.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as fh, np.load(fh) as f:  # our handle: closed on a torn zip
            found = sorted(f.files)
            arrays = {name: f[name] for name in names} if found == sorted(names) else None
    except Exception as exc:  # BadZipFile, EOFError, ValueError (pickled arrays), OSError
        why = f"it cannot be read ({type(exc).__name__}: {exc})"
    else:
        why = (f"it holds the arrays {found}, expected {sorted(names)}" if arrays is None
               else check(arrays) if check is not None else None)
    if why is None:
        return arrays
    warnings.warn(f"checkpoint file {path} is not used: {why}; its chunk is recomputed",
                  CheckpointWarning, stacklevel=2)
    return None


def _check_prefixes(prefix: str | Iterable[str]) -> tuple[str, ...]:
    prefixes = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    if not all(isinstance(p, str) and p for p in prefixes):
        raise ValueError(f"prefix must be a non-empty str or an iterable of them, got "
                         f"prefix={prefix!r}")
    return prefixes


def count_chunk_files(directory: str | os.PathLike, prefix: str | Iterable[str]) -> int:
    """The chunk files of the runs ``prefix`` in ``directory`` (0 if it does not exist).

    ``prefix``: a run's file prefix (``CallableRun.digest()`` for the black-box sampler,
    :func:`run_hash` for the engine, or :func:`run_prefixes`), or several (none: 0). Temporary
    files of a write in progress are not counted.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for name in ("a1_c000000000000.npz", "a1_c000000000001.npz", "b2_c000000000000.npz"):
    ...         _ = (Path(d) / name).write_bytes(b"")
    ...     count_chunk_files(d, "a1"), count_chunk_files(d, ["a1", "b2"])
    (2, 3)
    """
    prefixes = _check_prefixes(prefix)
    directory = check_directory(directory)
    if directory is None or not directory.is_dir():
        return 0
    return sum(1 for p in directory.glob("*.npz")
               if p.is_file() and any(p.name.startswith(f"{x}_") for x in prefixes))


_PREFIXES: dict[str, list[str]] = {}
_PREFIXES_LOCK = threading.Lock()


def record_prefix(directory: str | os.PathLike, prefix: str) -> None:
    """Note that this process runs (or ran) the run ``prefix`` in ``directory``."""
    key = str(Path(directory).resolve())
    with _PREFIXES_LOCK:
        known = _PREFIXES.setdefault(key, [])
        if prefix not in known:
            known.append(prefix)


def run_prefixes(directory: str | os.PathLike) -> tuple[str, ...]:
    """The file prefixes of the runs this process opened in ``directory``, oldest first (a
    pilot's and a main run's, ...): ``count_chunk_files(d, run_prefixes(d))`` counts this
    process's chunk files, not those other runs left in the folder."""
    if not isinstance(directory, str | os.PathLike):
        raise ValueError(f"directory must be a path, got directory={directory!r}")
    with _PREFIXES_LOCK:
        return tuple(_PREFIXES.get(str(Path(directory).resolve()), ()))


# ------------------------------------------------------------------ implementation code
#: How much of an implementation's code its digest covers, strongest first: ``"source"`` (a
#: named function's source and its module file), ``"module"`` (a lambda, a closure over
#: objects that are not plain data, a callable object or compiled code: the module files and
#: the library versions only), ``"none"`` (nothing was found: no source, no module file).
DIGEST_STRENGTHS = ("source", "module", "none")
_MAX_DEPTH = 6


def _weakest(*strengths: str) -> str:
    return max(strengths, key=DIGEST_STRENGTHS.index, default="source")


@functools.lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    from importlib.metadata import packages_distributions

    return packages_distributions()


def _module_into(h, module_name: str | None) -> bool:
    """Digest a module's file and its distribution's version; False when neither exists."""
    from importlib.metadata import PackageNotFoundError, version

    found = False
    module = sys.modules.get(module_name or "")
    path = getattr(module, "__file__", None)
    with contextlib.suppress(OSError, TypeError):
        h.update(Path(path).read_bytes())
        found = True
    for dist in _distributions().get((module_name or "").partition(".")[0], []):
        with contextlib.suppress(PackageNotFoundError):
            h.update(f"{dist}=={version(dist)}".encode())
            found = True
    h.update(f"|{module_name}|".encode())
    return found


def _plain_data(value: object) -> bytes | None:
    """The bytes of a plain value (numbers, strings, arrays, containers of them), else None."""
    if isinstance(value, np.ndarray) and value.dtype != object:
        return value.dtype.str.encode() + repr(value.shape).encode() + value.tobytes()
    try:
        return json.dumps(value, sort_keys=True, default=_no_object).encode()
    except (TypeError, ValueError):
        return None


def _no_object(o: object):
    if isinstance(o, np.generic | np.ndarray) and np.asarray(o).dtype.kind != "O":
        return np.asarray(o).tolist()
    if isinstance(o, tuple | set | frozenset):
        return sorted(o, key=repr) if not isinstance(o, tuple) else list(o)
    raise TypeError(type(o).__name__)


def _source(obj: object) -> str | None:
    try:
        return inspect.getsource(obj)
    except Exception:  # no file (OSError), built-in (TypeError), a source that won't parse
        return None


def _function_into(h, fn, seen: set[int], depth: int) -> str:
    source = _source(fn)
    has_file = _module_into(h, getattr(fn, "__module__", None))
    code = fn.__code__
    h.update((source or "").encode() + code.co_code + repr(code.co_names).encode())
    strength = "source" if source and fn.__name__ != "<lambda>" else "module"
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
        data = None if callable(value) else _plain_data(value)
        if data is not None:
            h.update(data)
        elif callable(value):
            strength = _weakest(strength, _digest_into(h, value, seen, depth + 1))
        else:
            strength = _weakest(strength, "module")
    return strength if (source or has_file) else "none"


#: a memory address in a repr (``<function f at 0x7f3a2c1b2d30>``), which differs between runs;
#: not any "0x" (a temporary directory's random name holds one about once in 100)
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def _digest_into(h, obj: object, seen: set[int], depth: int) -> str:
    """Digest the code of ``obj`` into ``h``; the strength of what was covered."""
    from audit.model.implementation import CallableImplementation

    if id(obj) in seen or depth > _MAX_DEPTH:
        return "source" if id(obj) in seen else "module"
    seen.add(id(obj))
    if isinstance(obj, CallableImplementation):  # the adapters' and assert_private's form
        parts = [obj.func] + ([obj.batch_func] if obj.batch_func is not None else [])
        return _weakest(*(_digest_into(h, p, seen, depth + 1) for p in parts))
    if isinstance(obj, functools.partial):
        data = _plain_data([list(obj.args), obj.keywords])
        h.update(data or b"?")
        return _weakest(_digest_into(h, obj.func, seen, depth + 1),
                        "source" if data is not None else "module")
    if inspect.ismethod(obj):
        return _weakest(_digest_into(h, obj.__func__, seen, depth + 1),
                        _digest_into(h, obj.__self__, seen, depth + 1))
    if inspect.isfunction(obj):
        return _function_into(h, obj, seen, depth)
    cls = obj if inspect.isclass(obj) else type(obj)
    source = _source(cls)
    h.update((source or "").encode())
    has_file = _module_into(h, getattr(cls, "__module__", None))
    if not inspect.isclass(obj) and dataclasses.is_dataclass(obj) \
            and not _ADDRESS.search(repr(obj)):
        h.update(repr(obj).encode())  # the state of a described object (no addresses)
    if not (source or has_file):
        return "none"
    return "source" if inspect.isclass(obj) and source else "module"


def code_digest(implementation: object) -> tuple[str, str]:
    """A digest of an implementation's code and how much of it the digest covers.

    A plain function: its source and its module file's bytes (strength ``"source"``);
    functions it closes over are digested too, and plain data it closes over (numbers,
    strings, arrays, containers of them) as it is now (a cache the mechanism fills changes
    the digest: a chunk recomputed, never a stale one reused). A lambda, a closure over
    other objects, a callable object (its class's source and the state of a dataclass),
    compiled or built-in code: the module files and the versions of the distributions that
    installed them (``"module"``).
    Nothing found: ``"none"``. A :class:`~audit.model.implementation.CallableImplementation`
    (what ``audit.adapters`` builds) is digested through the functions it wraps.

    Returns
    -------
    (str, str)
        16 hex digits and the strength, one of :data:`DIGEST_STRENGTHS`.
    """
    h = hashlib.sha256()
    strength = _digest_into(h, implementation, set(), 0)
    return h.hexdigest()[:16], strength
