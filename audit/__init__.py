"""Empirical privacy auditing of DP releases under missing data.

Subpackages are imported on demand (``from audit import accountant as acc``) so that the
command line starts quickly and numba kernels compile only when a run needs them.
"""

__version__ = "0.1.0"
