"""Simulation layer: draws outputs of A_D(z) and A_D(z') and counts a statistic of them.

The only place numba is imported. Data flow:

- ``jit``: the one jit decorator, holding every numba option of the kernels and helpers;
- ``rng``: counter-seeded xoshiro256** streams, one per (seed, side, block);
- ``kernels``: numba kernels (draw, project, bin) over blocks, with their tuple arguments;
- ``planning``: chunks of blocks (a function of the run's size only) and the worker count;
- ``processes``: process plumbing shared by both samplers, numba-free: usable CPUs, the one
  worker cap and its notes, the joblib loop, SIGTERM → SystemExit, the workers' parent watch;
- ``execution``: runs the chunks of the kernels in this process or over joblib workers;
- ``checkpoints``: one atomic file per finished chunk, named by inputs and kernel code;
- ``callables``: the black-box sampler, a user's Python implementation called in chunks;
- ``gpu``/``gpu_kernel``: the optional CUDA backend (numba-cuda), the kernels' helpers compiled
  as device functions;
- ``engine``: the public API (``run_histograms``, ``sample_outputs``, ``default_edges``).

numba loads with ``jit``, ``rng``, ``densities``, ``kernels``, ``execution``, ``gpu`` and
``gpu_kernel``: importing this package, ``engine``, ``planning``, ``processes``, ``checkpoints`` or
``callables`` does not import it, and a black-box run (``callables.iter_chunks``) never does.
"""
