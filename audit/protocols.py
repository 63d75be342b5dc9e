"""Interfaces between the parts of an audit (STYLE.md: protocols in one small module).

The distinguisher protocol shared by every attack.

An attack looks at what it is allowed to see (white box: the two output laws; black box: a
pilot sample from each side, never the main run) and returns a :class:`Score`: a function
whose large values are evidence for dataset z (law P) against z' (law Q). The engine then
histograms either the output itself (scalar outputs; the score is read per bin) or the score
computed inside the kernel (vector outputs), and the estimators in :mod:`audit.estimation.estimators`
turn threshold regions of the score into ε lower bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from audit.mixture import Mixture

__all__ = [
    "ATTACK_ENTRY_POINT_GROUP",
    "Attack",
    "AttackInput",
    "Score",
    "available_attacks",
    "bin_representatives",
    "load_attack",
]


@dataclass(frozen=True, eq=False)
class AttackInput:
    """What an attack may use.

    Parameters
    ----------
    P, Q : Mixture
        The output laws of A_D(z) and A_D(z'). Only white-box attacks may read them.
    pilot_p, pilot_q : ndarray, shape (m,) or (m, dim)
        Pilot outputs of A_D(z) and A_D(z'), drawn from streams independent of the main run.
    """

    P: Mixture
    Q: Mixture
    pilot_p: np.ndarray
    pilot_q: np.ndarray

    @property
    def is_scalar(self) -> bool:
        return self.P.is_scalar


def bin_representatives(edges: np.ndarray) -> np.ndarray:
    """One point per histogram bin: underflow, each bin's centre, overflow.

    The underflow and overflow bins are represented by their finite edge, so a score is
    evaluated where those bins begin.
    """
    edges = np.asarray(edges, dtype=np.float64)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return np.concatenate([[edges[0]], centres, [edges[-1]]])


@dataclass(frozen=True, eq=False)
class Score:
    """A fitted distinguisher.

    Parameters
    ----------
    attack : str
        Name of the attack that produced it.
    function : callable
        Plain-numpy score of raw outputs: shape (m,) or (m, dim) → (m,). Larger values are
        evidence for z (law P).
    kernel : tuple or None
        For vector outputs, what the engine's kernel histograms per trial: ``("llr",)`` for
        the exact log-likelihood ratio of the two mixtures, or ``("linear", weights, offset)``
        for ``weights · x + offset``. ``None`` for scalar outputs, whose kernel histograms the
        output itself.
    transform : callable or None
        Maps the histogrammed quantity to the score. Defaults to ``function`` when ``kernel``
        is None (the histogrammed quantity is the output) and to the identity otherwise.
    """

    attack: str
    function: Callable[[np.ndarray], np.ndarray]
    kernel: tuple | None = None
    transform: Callable[[np.ndarray], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.kernel is not None and self.kernel[0] not in ("llr", "linear"):
            raise ValueError(f"kernel must be ('llr',) or ('linear', w, c), got {self.kernel!r}")

    def per_bin(self, edges: np.ndarray) -> np.ndarray:
        """Score of every bin of a histogram with these edges (underflow and overflow too).

        For scalar outputs the histogrammed quantity is the output and the score is evaluated
        at each bin's representative point; for kernel scores the histogrammed quantity is the
        score itself.
        """
        reps = bin_representatives(edges)
        if self.transform is not None:
            return np.asarray(self.transform(reps), dtype=np.float64)
        if self.kernel is None:
            return np.asarray(self.function(reps), dtype=np.float64)
        return reps

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Score of raw outputs (pilot samples)."""
        return np.asarray(self.function(np.asarray(x, dtype=np.float64)), dtype=np.float64)


@runtime_checkable
class Attack(Protocol):
    """A distinguisher: fit on what it may see, return a :class:`Score`."""

    name: str
    white_box: bool

    def fit(self, data: AttackInput) -> Score: ...


ATTACK_ENTRY_POINT_GROUP = "audit.attacks"


def available_attacks() -> dict[str, object]:
    """Attacks registered under the ``audit.attacks`` entry-point group, by name.

    :mod:`audit` never imports :mod:`attacks`: the attacks register themselves as entry points
    in ``pyproject.toml``, so a third-party package can add its own the same way.
    """
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ATTACK_ENTRY_POINT_GROUP)}


def load_attack(name: str) -> Attack:
    """Instantiate the attack registered as ``name`` with its default settings."""
    eps = available_attacks()
    if name not in eps:
        allowed = ", ".join(repr(k) for k in sorted(eps)) or "(none installed)"
        raise ValueError(f"attack must be one of {allowed}, got attack={name!r}")
    return eps[name].load()()
