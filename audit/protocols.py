"""The interfaces between the layers of an audit.

- :class:`Query` and :class:`MissingnessMechanism` describe the setting (``audit.model``
  implements the catalogues; any object with these methods can be audited).
- An attack (``attacks/``, or a third-party package) maps what it may see to a :class:`Score`.
  A :class:`BlackBoxAttack` sees pilot samples only; a :class:`WhiteBoxAttack` also sees the
  two output laws. Being white box is a property of the class, so the runner never hands the
  laws to an attack that claims to be black box.
- A :class:`Score` says what the engine histograms (a projection, ``audit.statistics``) and
  how a histogrammed value maps to evidence for dataset z (larger = more evidence for
  P = A_D(z) against Q = A_D(z')).

``audit`` never imports ``attacks``: attacks register under the ``audit.attacks`` entry-point
group (``pyproject.toml``) and :func:`load_attack` finds them by name.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from audit.enums import MissingnessClass
from audit.mixture import Mixture
from audit.statistics import (
    ExactLLR,
    LinearProjection,
    OutputValue,
    Projection,
    bin_representatives,
)

__all__ = [
    "ATTACK_ENTRY_POINT_GROUP",
    "Query",
    "MissingnessMechanism",
    "Pilot",
    "Laws",
    "Score",
    "BlackBoxAttack",
    "WhiteBoxAttack",
    "Attack",
    "available_attacks",
    "load_attack",
]


@runtime_checkable
class Query(Protocol):
    """A query f(x) = Σ_i g(x_i) on incomplete data (NA read as 0), with its FWL constants."""

    name: ClassVar[str]

    def check_dimension(self, d: int) -> int: ...

    def output_dim(self, d: int) -> int: ...

    def contributions(self, rows, n: int) -> np.ndarray: ...

    def evaluate(self, x) -> np.ndarray: ...

    def fwl_constants(self, n: int, d: int, bound: float): ...

    def candidate_records(self, d: int, bound: float) -> np.ndarray: ...

    def params(self) -> dict: ...


@runtime_checkable
class MissingnessMechanism(Protocol):
    """A missing-feature mechanism F: record → random mask (True = missing)."""

    kind: ClassVar[str]
    missing_class: ClassVar[MissingnessClass]

    def check_dimension(self, d: int) -> int: ...

    def p_star(self, d: int) -> float: ...

    def rho(self, d: int) -> float: ...

    def mask_distribution(self, record) -> tuple[np.ndarray, np.ndarray]: ...

    def sample_masks(self, records, rng=None) -> np.ndarray: ...

    def params(self) -> dict: ...


@dataclass(frozen=True, eq=False)
class Pilot:
    """Pilot outputs of A_D(z) (``p``) and A_D(z') (``q``), from streams independent of the
    main run: shape (m,) for scalar outputs, (m, dim) for vectors."""

    p: np.ndarray
    q: np.ndarray

    @property
    def is_scalar(self) -> bool:
        return np.ndim(self.p) == 1

    @property
    def dim(self) -> int:
        return 1 if self.is_scalar else int(np.shape(self.p)[1])

    def split(self, m: int) -> tuple[Pilot, Pilot]:
        """The first ``m`` draws of each side and the rest."""
        return Pilot(self.p[:m], self.q[:m]), Pilot(self.p[m:], self.q[m:])


@dataclass(frozen=True, eq=False)
class Laws:
    """The exact output laws P = A_D(z) and Q = A_D(z') (white-box attacks only)."""

    P: Mixture
    Q: Mixture


@dataclass(frozen=True, eq=False)
class Score:
    """A fitted distinguisher.

    Parameters
    ----------
    attack : str
        Name of the attack that produced it.
    projection : OutputValue, ExactLLR or LinearProjection
        What the engine histograms for each output.
    transform : callable or None
        Maps projected values to the score (vectorised); None means the projected value is
        the score. Larger scores are evidence for z (law P).
    """

    attack: str
    projection: Projection
    transform: Callable[[np.ndarray], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.projection, OutputValue | ExactLLR | LinearProjection):
            raise ValueError(f"projection must be a statistics projection, got "
                             f"projection={self.projection!r}")

    def of_projected(self, v: np.ndarray) -> np.ndarray:
        """Score of projected values."""
        v = np.asarray(v, dtype=np.float64)
        if self.transform is None:
            return v
        return np.asarray(self.transform(v), dtype=np.float64)

    def per_bin(self, edges: np.ndarray) -> np.ndarray:
        """Score of every bin of a histogram of projected values (underflow, overflow and NaN
        too), evaluated at :func:`audit.statistics.bin_representatives`. A score that is NaN
        (the NaN bin, for a transform that does not score NaN) becomes −inf: that bin then
        joins only the regions {score ≤ t}, a choice made before any data, so it is valid."""
        with np.errstate(invalid="ignore"):
            s = self.of_projected(bin_representatives(edges))
        return np.where(np.isnan(s), -np.inf, s)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Score of raw outputs (pilot samples)."""
        return self.of_projected(self.projection.evaluate(x))


class BlackBoxAttack(abc.ABC):
    """An attack that sees samples only."""

    name: ClassVar[str]
    white_box: ClassVar[bool] = False

    @abc.abstractmethod
    def fit(self, pilot: Pilot) -> Score:
        """Fit on pilot samples; return the score."""


class WhiteBoxAttack(abc.ABC):
    """An attack that also sees the exact output laws."""

    name: ClassVar[str]
    white_box: ClassVar[bool] = True

    @abc.abstractmethod
    def fit(self, pilot: Pilot, laws: Laws) -> Score:
        """Fit on pilot samples and the laws; return the score."""


Attack = BlackBoxAttack | WhiteBoxAttack

ATTACK_ENTRY_POINT_GROUP = "audit.attacks"


def available_attacks() -> dict[str, object]:
    """Attacks registered under the ``audit.attacks`` entry-point group, by name."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ATTACK_ENTRY_POINT_GROUP)}


def load_attack(name: str) -> Attack:
    """Instantiate the attack registered as ``name`` with its default settings.

    Raises
    ------
    ValueError
        If no attack is registered under ``name`` (the message lists those that are), or the
        registered object is not a :class:`BlackBoxAttack` or :class:`WhiteBoxAttack`.
    """
    eps = available_attacks()
    if name not in eps:
        allowed = ", ".join(repr(k) for k in sorted(eps)) or "(none installed)"
        raise ValueError(f"attack must be one of {allowed}, got attack={name!r}")
    attack = eps[name].load()()
    if not isinstance(attack, BlackBoxAttack | WhiteBoxAttack):
        raise ValueError(f"attack {name!r} must subclass audit.protocols.BlackBoxAttack or "
                         f"WhiteBoxAttack, got {type(attack).__name__}")
    return attack
