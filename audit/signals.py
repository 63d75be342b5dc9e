"""How a SIGTERM unwinds the package: :class:`Terminated`, a ``SystemExit`` of status 143.

In the shared vocabulary (standard library only) so that the command line can name it without
loading the simulation layer (``python -m audit bound`` stays light), and the black-box sampler
(``audit.simulation.processes``, which raises it) lets it through as it does Ctrl-C.
"""

from __future__ import annotations

import signal

__all__ = ["Terminated"]


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread (:func:`audit.simulation.processes.sigterm_raises`,
    and for a whole command by :func:`audit.cli.interrupts.own_signals`). A ``SystemExit`` of
    status 143: code that does not know it (joblib, a worker pool) unwinds as on ``sys.exit``;
    the black-box sampler lets it through as it does Ctrl-C, never as the implementation's own
    ``sys.exit``."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)
