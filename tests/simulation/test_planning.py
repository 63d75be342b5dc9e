import itertools
import warnings

import pytest

from audit.enums import Backend
from audit.simulation import planning, processes
from audit.simulation.planning import ChunkPlan, ResourceCapWarning, make_schedule


@pytest.mark.parametrize(("n_blocks", "chunk_blocks", "n_chunks"),
                         [(1, 1, 1), (16, 1, 16), (64, 1, 64), (65, 2, 33), (1000, 16, 63),
                          (4096, 64, 64), (10**6, 64, 15625)])
def test_default_chunks_depend_on_blocks_only(n_blocks, chunk_blocks, n_chunks):
    plan = ChunkPlan.for_blocks(n_blocks)
    assert (plan.chunk_blocks, len(plan)) == (chunk_blocks, n_chunks)
    chunks = list(plan)
    assert chunks[0][0] == 0 and chunks[-1][1] == n_blocks
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))
    plans = {make_schedule(n_blocks, n_jobs=j, threads=t, backend=b).plan
             for j in (1, 2, -1) for t in (None, 1, 4) for b in (Backend.LOKY, Backend.THREADING)}
    assert plans == {plan}


def test_plan_is_index_arithmetic():
    n_blocks = -(-(10**15) // 65536)
    plan = ChunkPlan.for_blocks(n_blocks)
    assert len(plan) == -(-n_blocks // 64)
    assert plan[0] == (0, 64) and plan[-1] == (64 * (len(plan) - 1), n_blocks)
    assert list(itertools.islice(plan, 2)) == [(0, 64), (64, 128)]
    with pytest.raises(IndexError):
        plan[len(plan)]


def test_explicit_chunk_blocks():
    plan = ChunkPlan.for_blocks(13, 5)
    assert list(plan) == [(0, 5), (5, 10), (10, 13)]


def test_workers_capped_at_cpus_with_one_warning(monkeypatch):
    monkeypatch.setattr(processes, "usable_cpus", lambda: 4)
    with pytest.warns(ResourceCapWarning, match="n_jobs=1000 capped at 4, the CPUs") as w:
        s = make_schedule(10**4, n_jobs=1000, threads=None, backend=Backend.LOKY)
    assert len(w) == 1 and s.workers == 4 and s.threads == 1 and not s.in_process
    assert s.notes == ("n_jobs=1000 capped at 4, the CPUs this process may use",)


def test_workers_capped_at_chunks_without_warning(monkeypatch):
    monkeypatch.setattr(processes, "usable_cpus", lambda: 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = make_schedule(3, n_jobs=-1, threads=None, backend=Backend.LOKY)
        one = make_schedule(1, n_jobs=2, threads=None, backend=Backend.THREADING)
    assert s.workers == 3 and "capped at the run's 3 chunks" in s.notes[0]
    # Capped to one worker: the run stays in this process with numba's own threads.
    assert one.workers == 1 and one.in_process and one.threads is None
    assert not one.parallel_kernel  # the threading backend runs serial kernels


def test_in_process_groups_chunks_workers_do_not():
    local = make_schedule(100, n_jobs=1, threads=None, backend=Backend.LOKY)
    assert local.in_process and local.group_blocks == planning.MAX_CHUNK_BLOCKS
    spread = make_schedule(100, n_jobs=2, threads=None, backend=Backend.LOKY)
    assert spread.group_blocks == spread.plan.chunk_blocks


def test_dask_all_workers_and_no_cpu_cap(monkeypatch):
    monkeypatch.setattr(processes, "usable_cpus", lambda: 2)
    s = make_schedule(10**4, n_jobs=-1, threads=None, backend=Backend.DASK)
    assert s.workers == -1 and not s.in_process
    s = make_schedule(10**4, n_jobs=16, threads=None, backend=Backend.DASK)
    assert s.workers == 16 and s.notes == ()
    assert not make_schedule(1, n_jobs=1, threads=None, backend=Backend.DASK).in_process


def test_usable_cpus_positive():
    assert planning.usable_cpus() >= 1
