"""Isolated environments: pinned requirements on a chosen Python, built once and cached.

An :class:`Environment` names what an isolated target needs: its requirements (pinned, numpy
among them: the worker exchanges float64 arrays) and the Python version (``"3.11"``) it runs
on. That interpreter is looked for among those on this machine (:func:`find_python`), never
downloaded. :func:`ensure` builds the environment once with ``python -m venv`` and pip (or
``uv``, if on the ``PATH``, with ``UV_PYTHON_DOWNLOADS=never``) and caches it under
:func:`cache_root` as ``envs/<key>``, the key being a hash of the requirements, the Python
version and the interpreter (:meth:`Environment.key`).

Concurrent builders do not corrupt it: a builder holds an exclusive lock (``envs/<key>.lock``,
``fcntl.flock``, the holder's PID written in it) while it builds in a temporary folder
``envs/.build-<key>-*``, writes the description ``audit-env.json`` last, and renames the folder
to ``envs/<key>`` (atomic on one file system); a second builder waits for the lock and finds
the environment complete. A folder without its description is a failed build and is rebuilt.

Nothing is left behind by a stopped build. pip (or uv) runs in its own process group, which
is killed when the builder gets Ctrl-C or SIGTERM (an exception: the command line turns SIGTERM
into one), and the partial folder and the lock file are removed on the way out. A builder
killed outright (SIGKILL) cannot clean up, so the next build recovers: the kernel releases a
dead process's ``flock``, so a lock file naming a dead PID is taken over at once, and the
``.build-<key>-*`` folders found under the lock are removed. On Linux pip also gets SIGKILL
when its builder dies (``prctl(PR_SET_DEATHSIG)``); processes pip itself started (a package
built from source) are not covered by that and end on their own.

Every failure is a ``ValueError`` with one line: a Python version not on this machine (the
message names it and where it was looked for), pip failing (its last line: no registry
reachable, no such version), a build past :data:`BUILD_TIMEOUT`.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from audit.cache import CACHE_ENV, cache_root

__all__ = ["CACHE_ENV", "BUILD_TIMEOUT", "DESCRIPTION", "Environment", "BuiltEnvironment",
           "cache_root", "find_python", "ensure", "existing", "built", "remove"]

#: seconds one build may take (creating the venv and installing the requirements)
BUILD_TIMEOUT = 1800.0
#: the file written last into a built environment: its description (JSON)
DESCRIPTION = "audit-env.json"
_VERSION = re.compile(r"^3\.\d{1,2}$")


@dataclass(frozen=True)
class Environment:
    """What an isolated target runs in.

    Parameters
    ----------
    name : str
        The name ``python -m audit env`` shows (the adapter's library, ``"smartnoise-sql"``).
    requirements : tuple of str
        pip requirement strings, pinned (``"numpy==1.26.4"``); one of them names numpy.
    python : str
        The Python version, ``"3.X"``, among the interpreters on this machine.
    """

    name: str
    requirements: tuple[str, ...]
    python: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9][\w.-]*", self.name):
            raise ValueError(f"name must be letters, digits, '-', '_' or '.', got "
                             f"name={self.name!r}")
        reqs = tuple(self.requirements)
        if not reqs or not all(isinstance(r, str) and r.strip() == r and r for r in reqs):
            raise ValueError(f"requirements must be non-empty strings, got "
                             f"requirements={self.requirements!r}")
        if not any(re.match(r"numpy\b", r, re.IGNORECASE) for r in reqs):
            raise ValueError(f"requirements must name numpy (the worker exchanges float64 "
                             f"arrays), got requirements={reqs!r}")
        object.__setattr__(self, "requirements", reqs)
        if not isinstance(self.python, str) or not _VERSION.match(self.python):
            raise ValueError(f"python must look like '3.11', got python={self.python!r}")

    def key(self, interpreter: str | None = None) -> str:
        """16 hex digits of the requirements, the Python version and the interpreter (its
        resolved path and full version, :func:`find_python` if not given)."""
        interpreter = interpreter or find_python(self.python)[0]
        text = json.dumps({"requirements": list(self.requirements), "python": self.python,
                           "interpreter": interpreter, "full": _full_version(interpreter)})
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BuiltEnvironment:
    """An environment in the cache: its folder and its description."""

    path: Path
    description: dict

    @property
    def python(self) -> Path:
        """The environment's interpreter."""
        return self.path / "bin" / "python"


def _candidates(version: str) -> list[str]:
    """Interpreters that may be Python ``version``, in the order they are tried."""
    out = []
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        out.append(getattr(sys, "_base_executable", None) or sys.executable)
    out.append(shutil.which(f"python{version}") or "")
    out += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    pyenv = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    out += sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"), reverse=True)
    return [c for c in dict.fromkeys(out) if c and os.access(c, os.X_OK)]


def _full_version(interpreter: str) -> str:
    try:
        done = subprocess.run([interpreter, "-c", "import sys, venv; print("
                               "'%d.%d.%d' % sys.version_info[:3])"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def find_python(version: str) -> tuple[str, str]:
    """(the resolved path, the full version) of an interpreter of Python ``version`` on this
    machine: the running one, ``python3.X`` on the ``PATH``, ``/usr/bin``, ``/usr/local/bin``
    or pyenv's versions. Never downloads one.

    Raises
    ------
    ValueError
        No working interpreter of that version (the message names the version and the
        places looked at).
    """
    for candidate in _candidates(version):
        full = _full_version(candidate)
        if full.startswith(version + "."):
            return os.path.realpath(candidate), full
    raise ValueError(f"python {version} is not on this machine (looked for python{version} on "
                     f"the PATH, in /usr/bin, /usr/local/bin and ~/.pyenv/versions); install "
                     f"Python {version}: the auditor never downloads an interpreter")


#: prctl's option: the signal a process gets when its parent dies (linux/prctl.h)
_PR_SET_DEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process dies (Linux), None
    elsewhere. ``prctl`` is looked up here, in the parent: the child between fork and exec only
    calls it, and exits if its parent already died before the call took effect."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    parent = os.getpid()

    def setup() -> None:
        prctl(_PR_SET_DEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return setup


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group (pip and whatever it started), then reap ``proc``.
    The group is signalled before ``proc`` is reaped, so its id cannot have been reused."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _run(command: list[str], what: str, env: dict | None = None) -> None:
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, env=env,
                                start_new_session=True, preexec_fn=_die_with_parent())
    except OSError as exc:
        raise ValueError(f"{what} could not start ({exc})") from None
    try:
        out, err = proc.communicate(timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ValueError(f"{what} took more than {BUILD_TIMEOUT:g} s") from None
    except BaseException:  # Ctrl-C, SIGTERM as SystemExit: pip goes first
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (err + "\n" + out).splitlines()
                 if ln.strip() and "is ignored" not in ln]
        errors = [ln for ln in lines if ln.startswith("ERROR") or "error" in ln.lower()]
        last = (errors or lines or ["(no output)"])[-1]
        raise ValueError(f"{what} failed (exit {proc.returncode}): {last}")


def _install(interpreter: str, folder: Path, requirements: tuple[str, ...], name: str) -> None:
    """Create the venv ``folder`` on ``interpreter`` and install ``requirements`` into it."""
    uv = shutil.which("uv")
    what = f"building the environment of {name!r}"
    if uv:
        env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        _run([uv, "venv", "--quiet", "--python", interpreter, str(folder)],
             f"{what} (uv venv)", env)
        _run([uv, "pip", "install", "--quiet", "--python", str(folder / "bin" / "python"),
              *requirements], f"{what} (uv pip install)", env)
        return
    _run([interpreter, "-m", "venv", str(folder)], f"{what} (python -m venv)")
    _run([str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-input",
          "--disable-pip-version-check", *requirements], f"{what} (pip install)")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the exclusive lock ``path`` for the block; the lock file is removed on the way out.

    The lock is ``flock`` on the file, which the kernel releases when its holder dies: a lock
    file left by a killed builder (its PID inside) is taken over at once. A waiter that gets
    the lock on a file its holder has meanwhile removed tries again on the current one, so
    removing the file is safe. The holder's PID is written in the file (for a person looking).
    """
    while True:
        handle = open(path, "a")  # closed below, on every path
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                if os.path.samestat(os.fstat(handle.fileno()), os.stat(path)):
                    break
            except FileNotFoundError:
                pass
        except BaseException:
            handle.close()
            raise
        handle.close()  # the holder removed the file this one waited on: lock the new one
    try:
        os.ftruncate(handle.fileno(), 0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)  # while still locked: a waiter on it then sees it removed
        handle.close()  # (which releases the flock)


def _read(path: Path) -> BuiltEnvironment | None:
    try:
        description = json.loads((path / DESCRIPTION).read_text())
    except (OSError, ValueError):
        return None
    return BuiltEnvironment(path, description) if isinstance(description, dict) else None


def ensure(environment: Environment) -> BuiltEnvironment:
    """The built environment, built now if it is not in the cache (see the module docstring).

    Raises
    ------
    ValueError
        The Python version is not on this machine, or the build failed (one line: pip's last
        error line, or the timeout).
    """
    interpreter, full = find_python(environment.python)
    key = environment.key(interpreter)
    envs = cache_root() / "envs"
    path = envs / key
    found = _read(path)
    if found is not None:
        return found
    envs.mkdir(parents=True, exist_ok=True)
    with _locked(envs / f"{key}.lock"):
        found = _read(path)  # another builder finished while this one waited
        if found is not None:
            return found
        if path.exists():  # a build that died before its description: start again
            shutil.rmtree(path, ignore_errors=True)
        for stale in envs.glob(f".build-{key}-*"):  # a builder killed outright left it
            shutil.rmtree(stale, ignore_errors=True)
        folder = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=envs))
        try:
            start = time.monotonic()
            _install(interpreter, folder, environment.requirements, environment.name)
            description = {"name": environment.name, "key": key,
                           "requirements": list(environment.requirements),
                           "python": full, "interpreter": interpreter,
                           "build_seconds": round(time.monotonic() - start, 1),
                           "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            (folder / DESCRIPTION).write_text(json.dumps(description, indent=1))
            os.rename(folder, path)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return BuiltEnvironment(path, description)


def existing(environment: Environment) -> BuiltEnvironment | None:
    """The environment if it is built in the cache, else None (never builds; None too when
    its Python version is not on this machine)."""
    try:
        key = environment.key()
    except ValueError:
        return None
    return _read(cache_root() / "envs" / key)


def built() -> list[BuiltEnvironment]:
    """Every complete environment in the cache, by name then key."""
    envs = cache_root() / "envs"
    found = [_read(p) for p in sorted(envs.glob("*")) if p.is_dir()] if envs.is_dir() else []
    return sorted((b for b in found if b is not None),
                  key=lambda b: (str(b.description.get("name")), b.path.name))


def remove(name: str) -> list[Path]:
    """Remove every cached environment built under ``name``; the folders removed."""
    gone = []
    for env in built():
        if env.description.get("name") == name:
            with _locked(env.path.parent / f"{env.path.name}.lock"):
                shutil.rmtree(env.path)
            gone.append(env.path)
    return gone
