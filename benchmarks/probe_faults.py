"""Fault probes of the command line, as a new user and a QA engineer would try it.

Each probe runs ``python -m audit ...`` in a subprocess and checks the README's promises:
the exit status (0 ok, 1 violation, 2 bad input before any work, 3 failed once started,
130 interrupted, 141 stdout closed, 143 SIGTERM), one ``error:``/``interrupted:`` line where
one is due, and never a traceback nor a raw Python warning (``...Warning:``). Categories:
bad values per key, signals per phase (a mechanism that hangs while the run is timed and in
the main run, SIGINT and SIGTERM, one and two jobs; the pilot and the designs), pipes closed
early, an unwritable ``--json``, a full disk while it is written, two runs writing one
``--json`` at once, and the ``bound`` command's extremes.

Usage::

    python3 benchmarks/probe_faults.py            # prints one line per probe, then the counts

Exit status 0 when every probe held, 1 otherwise. It takes about two minutes on 2 cores.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAW_WARNING = re.compile(r"\w+Warning:")

BASE = """[scenario]
noise = "laplace"
epsilon = 1.0
query = "sum"
d = 1
n = 5
{scenario}
[missingness]
kind = "mcar-iid"
{missingness}
[audit]
seed = 1
{audit}
{tail}"""

HANG = """import os, time
import numpy as np
CALLS = [0]
def mech(data, rng):
    CALLS[0] += 1
    if CALLS[0] > int(os.environ["HANG_AFTER"]):
        open(os.environ["HANG_MARKER"], "w").close()
        time.sleep(10**6)
    return float(np.nansum(data)) + rng.laplace(scale=2.0)
"""


#: ``python -c FULL_DISK run ...``: the command line with every atomic write failing ENOSPC
FULL_DISK = ("import errno, os, sys\n"
             "import audit.pipeline.results as r\n"
             "def full(path, write):\n"
             "    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))\n"
             "r.atomic_write = full\n"
             "from audit.cli import main\n"
             "sys.exit(main(sys.argv[1:]))\n")


@dataclass
class Probe:
    category: str
    name: str
    args: list
    expect: int
    signal: int | None = None
    hang_after: int | None = None
    pipe: bool = False
    twin: bool = False  # run twice at once; the file written must be one whole result


def _config(folder: Path, name: str, *, scenario="", missingness="rate = 0.3",
            audit="trials = 2000", tail="") -> str:
    path = folder / f"{name}.toml"
    path.write_text(BASE.format(scenario=scenario, missingness=missingness, audit=audit,
                                tail=tail))
    return str(path)


def probes(folder: Path) -> list[Probe]:
    hang = '[implementation]\ntarget = "hangmech:mech"\nepsilon = 1.0\n'
    out: list[Probe] = []
    for key, kw in [  # values refused before any work (exit 2), one line naming the key
        ("scenario.bound = -1", {"scenario": "bound = -1.0"}),
        ("scenario.domain = [1, 0]", {"scenario": "domain = [1.0, 0.0]"}),
        ("audit.trials = 0", {"audit": "trials = 0"}),
        ("audit.confidence = 1e-300", {"audit": "confidence = 1e-300"}),
        ("audit.confidence = 1", {"audit": "confidence = 1.0"}),
        ("audit.jobs = -5", {"audit": "jobs = -5"}),
        ("audit.backend = 'spark'", {"audit": "backend = 'spark'"}),
        ("missingness.rate = 1.5", {"missingness": "rate = 1.5"}),
        ("[releases] count = 1e9 fresh", {"tail": "[releases]\ncount = 1e9\nmasks = 'fresh'"}),
        ("[strata] 65 rates", {"tail": "[strata]\nby = 'missing-count'\nrates = ["
                               + ", ".join(f"{i / 100:.2f}" for i in range(65)) + "]"}),
        ("[search] on the model", {"tail": "[search]"}),
    ]:
        out.append(Probe("bad value", key, ["run", _config(folder, f"bad{len(out)}", **kw)], 2))
    for jobs in ("1", "2"):
        for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
            for phase, after in (("timing", 10), ("main run", 3000)):
                out.append(Probe("signal", f"{sig.name} in the {phase}, --jobs {jobs}",
                                 ["run", _config(folder, f"hang{len(out)}", tail=hang),
                                  "--jobs", jobs, "--no-progress"], code, sig, after))
    out.append(Probe("bad value", "scenario.bound = 1e300 (runs: no overflow, no warning)",
                     ["run", _config(folder, "huge", scenario="bound = 1e300"),
                      "--no-progress"], 0))
    phases = [  # the mechanism hangs on its 201st call: past the timing, in the pilot or
        # the search's first round, of a plain audit and of each design (SIGINT, one job)
        ("the pilot", ""),
        ("an audit with [search] (its first round)", "[search]\ncalls = 500\n"),
        ("an audit with [strata]", "[strata]\nby = 'missing-count'\nrates = [0.0, 0.3]\n"),
        ("an audit with [releases]", "[releases]\ncount = 3\n"),
    ]
    for phase, table in phases:
        out.append(Probe("signal", f"SIGINT in {phase}, --jobs 1",
                         ["run", _config(folder, f"phase{len(out)}", tail=hang + table),
                          "--jobs", "1", "--no-progress"], 130, signal.SIGINT, 200))
    good = _config(folder, "good")
    out.append(Probe("pipe", "run | head -c 1", ["run", good, "--no-progress"], 141, pipe=True))
    out.append(Probe("pipe", "bound | head -c 1", ["bound", "--mechanism", "laplace",
                                                   "--epsilon", "1", "--p-star", "0.5"], 141,
                     pipe=True))
    (folder / "a-file").write_text("")
    out.append(Probe("disk", "--json under a file", ["run", good, "--json",
                                                     str(folder / "a-file" / "r.json")], 2))
    out.append(Probe("disk", "a full disk while --json is written",
                     ["-c", FULL_DISK, "run", good, "--no-progress", "--json",
                      str(folder / "full.json")], 3))
    out.append(Probe("disk", "two runs writing one --json at once",
                     ["run", good, "--no-progress", "--json", str(folder / "shared.json")], 0,
                     twin=True))
    for name, args in [
        ("masks without releases", ["--masks", "fresh"]),
        ("epsilon 1e300 with releases", ["--epsilon", "1e300", "--releases", "3"]),
        ("releases 0", ["--releases", "0"]),
        ("p-star 1.5", ["--p-star", "1.5"]),
    ]:
        base = {"--mechanism": "laplace", "--epsilon": "1", "--p-star": "0.5"}
        for flag in args[::2]:
            base.pop(flag, None)
        flat = [x for kv in base.items() for x in kv]
        out.append(Probe("bound", name, ["bound", *flat, *args], 2))
    out.append(Probe("bound", "--config of the accountant's check", [
        "bound", "--config", str(ROOT / "experiments" / "configs" / "accountant_sum.toml")], 0))
    return out


def run_probe(p: Probe, folder: Path) -> tuple[bool, str]:
    marker = folder / f"marker-{id(p)}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]),
           "HANG_MARKER": str(marker), "HANG_AFTER": str(p.hang_after or 10**9)}
    cmd = [sys.executable, *p.args] if p.args[0] == "-c" else \
        [sys.executable, "-m", "audit", *p.args]
    if p.twin:
        return _twins(cmd, env, Path(p.args[-1]))
    if p.pipe:  # the reader goes away after one byte
        shell = " ".join(f"'{c}'" for c in cmd) + " | head -c 1 > /dev/null; " \
            "echo ${PIPESTATUS[0]} >&2"
        res = subprocess.run(["bash", "-c", shell], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=300)
        lines = res.stderr.strip().splitlines()
        code, err = int(lines[-1]), "\n".join(lines[:-1])
    else:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if p.signal is not None:
            deadline = time.time() + 120
            while not marker.exists() and proc.poll() is None and time.time() < deadline:
                time.sleep(0.1)
            proc.send_signal(p.signal)
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            return False, "still running 120 s after the signal"
        code = proc.returncode
    problems = []
    if code < 0:  # killed by a signal: what a shell reports as 128 + the signal
        code = 128 - code
    if p.pipe and code == 0:
        code = 141  # the output fitted in the pipe before the reader left: nothing to break
    if code != p.expect:
        problems.append(f"exit {code}, expected {p.expect}")
    if "Traceback" in err:
        problems.append("a traceback")
    if RAW_WARNING.search(err):
        problems.append("a raw warning")
    if p.expect in (2, 3, 130) and len([x for x in err.splitlines() if x.strip()]) != 1:
        problems.append(f"{len(err.splitlines())} stderr lines, expected one")
    last = err.strip().splitlines()[-1][:90] if err.strip() else "(no stderr)"
    return not problems, "; ".join(problems) or last


def _twins(cmd: list, env: dict, target: Path) -> tuple[bool, str]:
    """Two copies of ``cmd`` at once: both succeed, and ``target`` holds one whole JSON
    result (the atomic write: never a mix of the two, never a partial file)."""
    import json

    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    codes = [p.returncode for p in procs]
    try:
        json.loads(target.read_text())
        whole = True
    except (OSError, ValueError):
        whole = False
    ok = codes == [0, 0] and whole and not any("Traceback" in e for e in errs)
    return ok, f"exits {codes}, the file {'is one whole result' if whole else 'is BROKEN'}"


def main() -> int:
    held = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "hangmech.py").write_text(HANG)
        for p in probes(folder):
            ok, note = run_probe(p, folder)
            held, failed = held + ok, failed + (not ok)
            print(f"{'held  ' if ok else 'FAILED'} [{p.category}] {p.name}: {note}", flush=True)
    print(f"\n{held} held, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
