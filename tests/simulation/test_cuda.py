"""The cuda backend (audit.simulation.gpu) on numba-cuda's simulator: no GPU needed.

The simulator must be chosen before numba.cuda is first imported, so the GPU runs happen in one
subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (``cuda_sim_cases.py``: small runs, a few thousand
draws per side); the tests here read its results. The refusals run in this process or in a
subprocess without a device.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from audit.enums import Backend
from audit.mixture import Mixture
from audit.simulation import checkpoints, engine, gpu
from audit.simulation.planning import CUDA_GROUP_BLOCKS, make_schedule
from audit.statistics import Statistic

from .cuda_sim_cases import CASES

pytestmark = pytest.mark.cuda

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCRIPT = HERE / "cuda_sim_cases.py"
P = Mixture([0.2, 0.5, 0.3], [0.0, 1.0, 3.0], "laplace", 1.0)
Q = Mixture([1.0], [0.0], "laplace", 1.0)
STAT = Statistic.output(engine.default_edges(P, Q, 32))


def _env(**extra: str) -> dict[str, str]:
    """This environment, this checkout's ``audit`` first, no simulator unless asked."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], env=_env(**env), capture_output=True,
                          text=True, timeout=900, cwd=ROOT)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> dict:
    """Every case of cuda_sim_cases.py, run once on the simulator."""
    pytest.importorskip("numba_cuda", reason="numba-cuda is not installed (the [test] extra "
                                              "installs it)")
    tmp = tmp_path_factory.mktemp("cudasim")
    proc = _run(str(SCRIPT), str(tmp / "out.json"), str(tmp / "checkpoints"),
                NUMBA_ENABLE_CUDASIM="1")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((tmp / "out.json").read_text())


@pytest.mark.slow  # 26 s of simulator (the default run keeps tests/cli/test_cli.py's
# end-to-end simulator run against the CPU result)
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_counts_equal_the_cpu_counts_chunk_by_chunk(simulated, name):
    r = simulated[name]
    assert r["shape"] == r["want_shape"]
    assert r["draws"] == r["want_draws"]
    assert r["identical"], f"{r['draws_in_other_bins']} draws counted in other bins"


@pytest.mark.slow  # 26 s of simulator (the default run keeps tests/cli/test_cli.py's
# end-to-end simulator run against the CPU result)
def test_the_case_list_covers_the_kernel_paths(simulated):
    """Shared memory and global atomics, every law kind and projection."""
    assert {simulated[n]["shared_memory"] for n in CASES} == {True, False}
    kinds = {(type(c[0]).__name__, type(c[2].projection).__name__) for c in CASES.values()}
    assert {"Mixture", "ProductMixture", "SubsetMixture"} <= {k for k, _ in kinds}
    assert {"OutputValue", "ExactLLR", "LinearProjection"} <= {m for _, m in kinds}


@pytest.mark.slow  # 26 s of simulator (the default run keeps tests/cli/test_cli.py's
# end-to-end simulator run against the CPU result)
def test_the_engine_routes_cuda_runs_and_resumes_their_checkpoints(simulated):
    r = simulated["engine"]
    assert r["identical"] == [True, True]  # a fresh run, then one resumed from 5 of 6 chunks
    assert r["files"] == 6 and r["workers"] == 1 and r["rate"] > 0  # measure_rate on cuda
    assert r["notes"] == ["n_jobs=3 ignored: backend='cuda' runs on the GPU from the calling "
                          "process"]
    assert r["many_bins_notes"] == [
        "7003 histogram counters exceed the 48 KiB of shared memory of a CUDA thread block: "
        "the GPU counted with global atomics (slower, same counts)"]


def test_the_kernel_compiles_for_a_gpu():
    """NVVM compiles the kernel and the shared helpers for compute capability 9.0, where
    libNVVM and NVRTC are installed (``[cuda]`` extra); skipped elsewhere."""
    pytest.importorskip("numba_cuda")
    proc = _run(str(SCRIPT), "ptx")
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = proc.stdout.strip().splitlines()[-1]
    if line.startswith("SKIP"):
        pytest.skip(line)
    assert line.startswith("OK") and "atom.shared.add.u64" in line
    assert "atom.global.add.u64" in line


def test_cuda_is_refused_without_a_device_before_any_work(tmp_path):
    pytest.importorskip("numba_cuda")
    code = (
        "import numpy as np\n"
        "from audit.mixture import Mixture\n"
        "from audit.simulation import engine\n"
        "from audit.statistics import Statistic\n"
        "P = Mixture([1.0], [0.0], 'laplace', 1.0)\n"
        f"ck = {str(tmp_path / 'ck')!r}\n"
        "g = np.random.default_rng(1)\n"
        "try:\n"
        "    engine.run_histograms(P, P, Statistic.output([0.0, 1.0]), 10, g,\n"
        "                          backend='cuda', checkpoint=ck)\n"
        "except ValueError as e:\n"
        "    print('REFUSED', e)\n"
        "print('untouched', g.integers(1 << 30))\n"
    )
    proc = _run("-c", code, CUDA_VISIBLE_DEVICES="")
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout.splitlines()
    assert out[0].startswith("REFUSED backend='cuda' found no CUDA device")
    assert out[1] == f"untouched {np.random.default_rng(1).integers(1 << 30)}"
    assert not (tmp_path / "ck").exists()


def test_cuda_without_numba_cuda_says_which_extra_to_install(monkeypatch):
    real = gpu.importlib.util.find_spec
    monkeypatch.setattr(gpu.importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba_cuda" else real(name, *a))
    with pytest.raises(ValueError, match=r"install the \[cuda\] extra") as info:
        engine.run_histograms(P, Q, STAT, 10, 0, backend="cuda")
    assert "\n" not in str(info.value)


def test_a_cuda_schedule_runs_in_process_with_the_cpu_chunks():
    cpu = make_schedule(10_000, n_jobs=1, threads=None, backend=Backend.LOKY)
    cuda = make_schedule(10_000, n_jobs=4, threads=2, backend=Backend.CUDA)
    assert cuda.plan == cpu.plan  # same chunk boundaries as the CPU backends
    assert cuda.in_process and cuda.workers == 1 and cuda.group_blocks == CUDA_GROUP_BLOCKS
    assert cuda.notes == ("n_jobs=4 ignored: backend='cuda' runs on the GPU from the calling "
                          "process",)
    assert make_schedule(10, n_jobs=1, threads=None, backend=Backend.CUDA).notes == ()


def test_cuda_runs_have_their_own_checkpoint_names():
    key = 123
    cpu = checkpoints.run_hash(P, Q, STAT, 100, key, 10)
    cuda = checkpoints.run_hash(P, Q, STAT, 100, key, 10, tag=checkpoints.CUDA_CODE_TAG)
    assert cpu != cuda and checkpoints.CUDA_CODE_TAG.startswith("cuda-")


def test_histograms_up_to_48_kib_are_reduced_in_shared_memory():
    assert gpu.uses_shared_memory(6144) and not gpu.uses_shared_memory(6145)
    assert Backend.parse("CUDA") is Backend.CUDA and "cuda" in engine.BACKENDS


def test_a_kernel_call_returns_at_most_out_bytes_of_counts():
    assert gpu.group_blocks(CUDA_GROUP_BLOCKS, 64, 4002) == CUDA_GROUP_BLOCKS
    small = gpu.group_blocks(CUDA_GROUP_BLOCKS, 64, 100_002)
    assert small % 64 == 0 and small // 64 * 2 * 100_002 * 8 <= gpu.OUT_BYTES
    assert gpu.group_blocks(CUDA_GROUP_BLOCKS, 64, 10**9) == 64  # one chunk at least
