"""The interfaces between the layers of an audit.

- :class:`Query` and :class:`MissingnessMechanism` describe the setting (``audit.model``
  implements the catalogues; any object with these members can be audited). Both protocols
  live in :mod:`audit.interfaces` with every other protocol of the package, and are
  re-exported here. A mechanism
  describes its mask law without enumeration, where it can, as an :class:`IndependentMasks`
  or a :class:`FixedCountMasks`.
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
from typing import ClassVar

import numpy as np

from audit.interfaces import MissingnessMechanism, Projection, Query
from audit.records import FixedCountMasks, IndependentMasks, Laws, MaskStructure, Pilot
from audit.statistics import Statistic

__all__ = [
    "ATTACK_ENTRY_POINT_GROUP",
    "Query",
    "MissingnessMechanism",
    "IndependentMasks",
    "FixedCountMasks",
    "MaskStructure",
    "protocol_members",
    "missing_members",
    "Pilot",
    "Laws",
    "Score",
    "BlackBoxAttack",
    "WhiteBoxAttack",
    "Attack",
    "available_attacks",
    "engine_attacks",
    "load_attack",
]


def protocol_members(protocol: type) -> tuple[str, ...]:
    """The members an object needs to satisfy ``protocol``, in definition order: its
    annotated attributes (``kind``, ``missing_class``, ...), then its methods and properties.

    Raises
    ------
    ValueError
        If ``protocol`` is not a ``typing.Protocol`` class.
    """
    if not (isinstance(protocol, type) and getattr(protocol, "_is_protocol", False)):
        raise ValueError(f"protocol must be a typing.Protocol class, got protocol={protocol!r}")
    names = [*vars(protocol).get("__annotations__", {}),
             *(k for k in vars(protocol) if not k.startswith("_"))]
    return tuple(dict.fromkeys(names))


def missing_members(obj: object, protocol: type) -> list[str]:
    """The members of ``protocol`` (:func:`protocol_members`) that ``obj`` lacks."""
    return [k for k in protocol_members(protocol) if not hasattr(obj, k)]


@dataclass(frozen=True, eq=False)
class Score:
    """A fitted distinguisher.

    Parameters
    ----------
    attack : str
        Name of the attack that produced it.
    projection : Projection
        What the engine histograms for each output (:class:`audit.interfaces.Projection`:
        a built-in of ``audit.statistics`` or a user's own class).
    transform : callable or None
        Maps projected values to the score (vectorised); None means the projected value is
        the score. Larger scores are evidence for z (law P).
    note : str
        What the attack had to fall back on (degenerate, separable or non-finite pilot data),
        reported in the result; empty when the fit went as designed.
    """

    attack: str
    projection: Projection
    transform: Callable[[np.ndarray], np.ndarray] | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.projection, Projection):
            raise ValueError(f"projection must be a projection (an object with evaluate and "
                             f"to_dict: audit.interfaces.Projection), got "
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
        return Statistic(self.projection, edges).bin_scores(self)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Score of raw outputs (pilot samples)."""
        return self.of_projected(self.projection.evaluate(x))


class BlackBoxAttack(abc.ABC):
    """An attack that sees samples only.

    ``engine_counted`` says whether every score it returns has one of the projections the
    model's engines count (``audit.statistics.ENGINE_PROJECTIONS``): only such an attack may
    audit the model (``audit.pipeline.parts.ModelTarget`` refuses the others before any
    work; an implementation audit counts any projection in numpy). False unless the class
    declares it.
    """

    name: ClassVar[str]
    white_box: ClassVar[bool] = False
    engine_counted: ClassVar[bool] = False

    @abc.abstractmethod
    def fit(self, pilot: Pilot) -> Score:
        """Fit on pilot samples; return the score."""


class WhiteBoxAttack(abc.ABC):
    """An attack that also sees the exact output laws (the model's only: its scores must have
    a projection the engines count, ``audit.statistics.ENGINE_PROJECTIONS``)."""

    name: ClassVar[str]
    white_box: ClassVar[bool] = True
    engine_counted: ClassVar[bool] = True

    @abc.abstractmethod
    def fit(self, pilot: Pilot, laws: Laws) -> Score:
        """Fit on pilot samples and the laws; return the score."""


Attack = BlackBoxAttack | WhiteBoxAttack

ATTACK_ENTRY_POINT_GROUP = "audit.attacks"


def available_attacks() -> dict[str, object]:
    """Attacks registered under the ``audit.attacks`` entry-point group, by name."""
    from audit._plugins import entry_points_of

    return entry_points_of(ATTACK_ENTRY_POINT_GROUP)


def black_box_attacks() -> list[str]:
    """The names of the registered attacks that are black boxes (sorted): what an
    implementation audit may run."""
    names = []
    for name, ep in sorted(available_attacks().items()):
        try:
            cls = ep.load()
        except Exception:  # noqa: BLE001 - a broken plug-in is listed by load_attack's error
            continue
        if isinstance(cls, type) and issubclass(cls, BlackBoxAttack):
            names.append(name)
    return names


def engine_attacks() -> list[str]:
    """The names of the registered attacks a model audit may run (sorted): white-box ones and
    black-box ones whose scores the engines count (``engine_counted``)."""
    names = []
    for name, ep in sorted(available_attacks().items()):
        try:
            cls = ep.load()
        except Exception:  # noqa: BLE001 - a broken plug-in is listed by load_attack's error
            continue
        if isinstance(cls, type) and issubclass(cls, BlackBoxAttack | WhiteBoxAttack) \
                and cls.engine_counted:
            names.append(name)
    return names


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
