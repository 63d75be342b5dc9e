"""Running the real ``python -m audit`` in a child process, as a user does, for the tests of
the suite and report commands.

Every child runs in its own process group with the default SIGINT handling restored (a child
of a shell under ``trap '' INT`` inherits SIG_IGN, and Python then never raises
KeyboardInterrupt), and its whole group is killed when the test is done with it, on success,
failure or timeout alike, so no audit outlives its test.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: run ``audit`` after ``{patch}`` (Python source) in the same interpreter, like ``-m audit``
_PATCHED = """\
import errno, os, runpy, sys
{patch}
sys.argv = ["audit", *{args!r}]
runpy.run_module("audit", run_name="__main__", alter_sys=True)
"""


def env() -> dict:
    """The environment with this checkout first on the path."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), out.get("PYTHONPATH", "")])
    return out


def _default_sigint() -> None:  # runs in the child, before exec
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc``'s process group (its workers too) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
    proc.wait()


@contextlib.contextmanager
def child(argv: list[str], **kwargs):
    """``python ARGV`` as a :class:`subprocess.Popen` (text pipes), killed on leaving."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    proc = subprocess.Popen([sys.executable, *argv], text=True, env=env(), cwd=ROOT,
                            start_new_session=True, preexec_fn=_default_sigint, **kwargs)
    try:
        yield proc
    finally:
        kill_group(proc)


def run(argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    """``python ARGV`` to completion (killed after ``timeout`` seconds)."""
    with child(argv) as proc:
        out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def audit(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m audit ARGS``."""
    return run(["-m", "audit", *args], timeout=timeout)


def audit_patched(patch: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m audit ARGS`` with the Python source ``patch`` run first in the process (to
    simulate a full disk, say)."""
    return run(["-c", _PATCHED.format(patch=patch, args=list(args))], timeout=timeout)


#: Figure.savefig on a disk that fills up while a PDF is written: some bytes, then ENOSPC
FULL_DISK_ON_PDF = """\
import matplotlib.figure as _figure
_savefig = _figure.Figure.savefig
def _full_disk(self, fname, *args, **kwargs):
    fmt = kwargs.get("format") or str(fname).rsplit(".", 1)[-1]
    if fmt != "pdf":
        return _savefig(self, fname, *args, **kwargs)
    if hasattr(fname, "write"):
        fname.write(b"%PDF-1.4 truncated")
    else:
        with open(fname, "wb") as fh:
            fh.write(b"%PDF-1.4 truncated")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
_figure.Figure.savefig = _full_disk
"""


def digests(folder) -> dict[str, str]:
    """sha256 of every file under ``folder``, by relative path (temporary files included)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}
