"""Isolated targets: a library audited in its own environment, through a worker process.

A library that cannot be installed beside the auditor (other pins of numpy, pandas or
opendp; another Python) is declared by its adapter with an
:class:`~audit.adapters.isolation.environments.Environment` (pinned requirements and a Python
version). The environment is built once and cached (:mod:`~audit.adapters.isolation.
environments`); a worker started in it (:mod:`~audit.adapters.isolation.worker`) imports only
the adapter's library-side module and answers batched calls in frames
(:mod:`~audit.adapters.isolation.framing`); the auditor sees an ordinary implementation
(:class:`~audit.adapters.isolation.client.IsolatedImplementation`).
"""

from audit.adapters.isolation.client import (
    IsolatedImplementation,
    Worker,
    WorkerError,
    WorkerTimeout,
    launch,
)
from audit.adapters.isolation.environments import Environment, cache_root, ensure

__all__ = ["Environment", "IsolatedImplementation", "Worker", "WorkerError", "WorkerTimeout",
           "cache_root", "ensure", "launch"]
