"""``python -m audit env build`` (and a ``run`` that builds on first use) stopped mid-build,
for real: a fake ``uv`` on the PATH (the builder prefers uv to pip) creates the venv at once
and then "installs" slowly, with a child of its own, so no network and no library build is
needed. SIGTERM and Ctrl-C end the installer's whole process group, remove the partial folder
and the lock, and print one line; a builder killed outright (SIGKILL) takes its installer with
it (Linux) and leaves a lock and a folder that the next build takes over and removes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from audit.adapters.isolation import environments as envs
from tests.adapters.isolation.test_client import gone
from tests.conftest import ROOT

#: installs nothing; with $FAKE_UV_SLOW set, writes "its pid, its child's pid" there and
#: sleeps (the child too)
FAKE_UV = textwrap.dedent("""\
    #!{python}
    import os, subprocess, sys, time
    args = sys.argv[1:]
    if args[0] == "venv":
        folder = args[-1]
        os.makedirs(os.path.join(folder, "bin"), exist_ok=True)
        os.symlink(args[args.index("--python") + 1], os.path.join(folder, "bin", "python"))
        sys.exit(0)
    if os.environ.get("FAKE_UV_SLOW"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        out = os.environ["FAKE_UV_SLOW"]
        with open(out + ".tmp", "w") as f:
            f.write(f"{{os.getpid()}} {{child.pid}}")
        os.rename(out + ".tmp", out)
        time.sleep(120)
    """)


@pytest.fixture
def fake_uv(tmp_path):
    """(the environment of a build with the fake uv and a cache in ``tmp_path``, the cache's
    ``envs`` folder, the file the slow installer writes its pids to)."""
    try:
        envs.find_python("3.11")  # the environment of dpmm, built here
    except ValueError as exc:
        pytest.skip(str(exc))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(FAKE_UV.format(python=sys.executable))
    (bin_dir / "uv").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           envs.CACHE_ENV: str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("FAKE_UV_SLOW", None)
    return env, tmp_path / "cache" / "envs", tmp_path / "pids"


BUILD = ("env", "build", "dpmm")
#: a run of an isolated target whose environment is not built yet: it builds on first use
RUN = ("run", str(ROOT / "experiments" / "configs" / "smartnoise_sum.toml"), "--no-progress")


def _build(env: dict, slow: Path | None = None, argv=BUILD) -> subprocess.Popen:
    if slow is not None:
        env = {**env, "FAKE_UV_SLOW": str(slow)}
    return subprocess.Popen([sys.executable, "-m", "audit", *argv], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _installer(proc: subprocess.Popen, pids: Path) -> list[int]:
    """The pids of the slow installer and its child, once it runs."""
    deadline = time.monotonic() + 30
    while not pids.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids.exists(), proc.communicate(timeout=10)
    return [int(p) for p in pids.read_text().split()]


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize(("argv", "sig", "code", "line"), [
    (BUILD, signal.SIGTERM, 143, "interrupted: the build of 'dpmm' was stopped; pip was ended"),
    (BUILD, signal.SIGINT, 130, "interrupted: the build of 'dpmm' was stopped; pip was ended"),
    (RUN, signal.SIGTERM, 143, "interrupted: run stopped before it finished"),
], ids=["sigterm", "ctrl-c", "sigterm-run-building-on-first-use"])
def test_a_stopped_build_ends_pip_and_leaves_nothing(fake_uv, argv, sig, code, line):
    env, folder, pids = fake_uv
    proc = _build(env, pids, argv)
    installer = []
    try:
        installer = _installer(proc, pids)
        assert any(p.name.startswith(".build-") for p in folder.iterdir())
        assert [p.read_text() for p in folder.glob("*.lock")] == [f"{proc.pid}\n"]
        proc.send_signal(sig)  # to the builder alone: it must end pip's group itself
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err
        assert out == "" and err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(line)
        assert sorted(p.name for p in folder.iterdir()) == []  # no .build-*, no lock
        assert all(gone(pid) for pid in installer), "the installer or its child survived"
    finally:
        _kill(installer)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    name = "dpmm" if argv == BUILD else "smartnoise-sql"
    done = subprocess.run([sys.executable, "-m", "audit", "env", "build", name], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith(f"{name}: built at "), done.stderr
    assert [p.name for p in folder.iterdir()] == [Path(done.stdout.split()[3]).name]


def test_a_builder_killed_outright_is_recovered_by_the_next_build(fake_uv):
    """SIGKILL leaves the lock (naming the dead builder) and the partial folder; the installer
    dies with its builder on Linux (PR_SET_DEATHSIG); the next build takes the lock over,
    removes the stale folder, builds and removes the lock."""
    env, folder, pids = fake_uv
    proc = _build(env, pids)
    installer = []
    try:
        installer = _installer(proc, pids)
        proc.kill()
        proc.communicate(timeout=10)
        if sys.platform.startswith("linux"):
            assert gone(installer[0]), "pip outlived its killed builder"
        stale = sorted(p.name for p in folder.iterdir())
        assert len(stale) == 2 and stale[0].startswith(".build-") and stale[1].endswith(".lock")
        assert (folder / stale[1]).read_text() == f"{proc.pid}\n"
        assert not psutil.pid_exists(proc.pid)
        done = subprocess.run([sys.executable, "-m", "audit", "env", "build", "dpmm"],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert [p.name for p in folder.iterdir()] == [stale[1].removesuffix(".lock")]
    finally:
        _kill(installer)  # the installer's own child is not covered by the death signal


def test_a_waiter_on_a_removed_lock_file_locks_the_current_one(tmp_path):
    """The holder removes the lock file as it releases it; a builder that was waiting on that
    file must not build under a lock nobody else can see: it locks the file at the path."""
    lock = tmp_path / "k.lock"
    holding, inside, release = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def holder():
        with envs._locked(lock):
            holding.set()
            release.wait(10)

    def waiter():
        with envs._locked(lock):
            inside.set()
            # another builder arriving now must find the lock held at the path
            with open(lock, "a") as other:
                try:
                    import fcntl

                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    seen.append("free")
                except BlockingIOError:
                    seen.append("held")

    first = threading.Thread(target=holder)
    first.start()
    assert holding.wait(10)
    second = threading.Thread(target=waiter)
    second.start()
    time.sleep(0.3)  # the waiter opened the file and blocks in flock
    assert not inside.is_set()
    release.set()
    first.join(10)
    second.join(10)
    assert seen == ["held"]
    assert not lock.exists()  # removed by its last holder
