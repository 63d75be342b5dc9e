"""Simulation layer: draws outputs of A_D(z) and A_D(z') and counts a statistic of them.

The only place numba is imported. Data flow:

- ``rng``: counter-seeded xoshiro256** streams, one per (seed, side, block);
- ``kernels``: numba kernels (draw, project, bin) over blocks, with their tuple arguments;
- ``planning``: chunks of blocks (a function of the run's size only) and the worker count;
- ``execution``: runs the chunks in this process or over joblib workers;
- ``checkpoints``: one atomic file per finished chunk, named by inputs and kernel code;
- ``gpu``/``gpu_kernel``: the optional CUDA backend (numba-cuda), the kernels' helpers compiled
  as device functions;
- ``engine``: the public API (``run_histograms``, ``sample_outputs``, ``default_edges``).
"""
