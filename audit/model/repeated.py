"""k releases of one implementation from one incomplete dataset, as one implementation.

Analysts release many statistics from one table: the table's missingness is drawn once and
every release reads the same masked entries (**shared** masks). Only when the missingness is
redrawn for every release (repeated collection, randomised feature masking) do the releases
see independent masks (**fresh** masks). docs/THEORY.md §9 derives what each regime
guarantees; this module makes either regime a black box the audit samples like any other:

- shared: the sampler masks the dataset once per trial and :class:`RepeatedReleases` calls
  the implementation k times on it;
- fresh: the sampler hands the complete dataset and :class:`RepeatedReleases` masks it anew,
  with the audit's missingness mechanism, before each of the k calls.

The output is the k releases side by side (a vector of k·dim values). Its claim, for an
implementation that keeps its per-release claim (ε, δ), is the k-fold basic composition
(kε, kδ), valid for any (ε, δ)-DP release; :meth:`RepeatedReleases.amplified` gives the claim
amplified by the missingness under each regime: [RPS] Theorem 3.2 applied once to the
composition (shared), or the amplified per-release claim composed k times (fresh).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from audit._validate import check_positive_int
from audit.enums import MaskRegime
from audit.model.implementation import Claim, Implementation
from audit.protocols import MissingnessMechanism
from audit.records import traits_of
from audit.theory import accountant as acc

__all__ = ["RepeatedReleases", "MAX_RELEASES"]

#: Most releases one black-box trial calls (the output holds k·dim values per call).
MAX_RELEASES = 10_000


@dataclass(frozen=True, eq=False)
class RepeatedReleases:
    """``count`` releases of ``inner`` from one dataset, with shared or fresh masks.

    Parameters
    ----------
    inner : Implementation
        The release, claiming (ε, δ) per release.
    count : int
        k, in [1, :data:`MAX_RELEASES`].
    masks : MaskRegime or str
        ``shared`` (the k calls see one masked dataset) or ``fresh`` (each call is masked
        anew by ``missingness``; the sampler must then hand the complete dataset).
    missingness : MissingnessMechanism
        The audit's mechanism (used to re-mask under ``fresh``).
    """

    inner: Implementation
    count: int
    masks: MaskRegime
    missingness: MissingnessMechanism
    claim: Claim = field(init=False)

    def __post_init__(self) -> None:
        k = check_positive_int(self.count, "releases.count")
        if k > MAX_RELEASES:
            raise ValueError(f"releases.count must be in [1, {MAX_RELEASES}] (each trial "
                             f"calls the inner release k times), got releases.count="
                             f"{self.count}")
        object.__setattr__(self, "masks", MaskRegime.parse_fixed(self.masks, "releases.masks"))
        c = self.inner.claim
        if k * c.delta >= 1.0:
            raise ValueError(f"releases.count × the claimed delta must be < 1 (the k-fold "
                             f"claim), got {k} × {c.delta:g}")
        object.__setattr__(self, "claim", Claim(
            k * c.epsilon, k * c.delta,
            f"{k} releases of {traits_of(self.inner).name} ({self.masks.value} masks): "
            f"the {k}-fold basic composition of ({c.epsilon:g}, {c.delta:g})"))

    @property
    def name(self) -> str:
        return f"{traits_of(self.inner).name} x{self.count} ({self.masks})"

    @property
    def params(self) -> dict:
        return {"inner": traits_of(self.inner).params, "releases": self.count,
                "masks": self.masks.value}

    def amplified(self, p_star: float, masks: MaskRegime | None = None
                  ) -> tuple[float, float]:
        """The k-release claim amplified by missing data with observation probability p*:
        Theorem 3.2 once on (kε, kδ) (shared masks), or k × the amplified per-release claim
        (fresh masks, basic composition); ``masks`` (default: this object's regime) asks for
        the other regime's value, e.g. what per-release accounting would claim."""
        c = self.inner.claim
        if (self.masks if masks is None else MaskRegime.parse_fixed(masks, "masks")) \
                is MaskRegime.SHARED:
            return acc.amplify(self.count * c.epsilon, self.count * c.delta, p_star)
        eps, delta = acc.amplify(c.epsilon, c.delta, p_star)
        return self.count * eps, self.count * delta

    def _masked(self, data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.masks is MaskRegime.SHARED:
            return data
        flat = data.reshape(-1, data.shape[-1])
        masks = self.missingness.sample_masks(flat, rng).reshape(data.shape)
        return np.where(masks, np.nan, data)

    def __call__(self, data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        outs = [np.asarray(self.inner(self._masked(data, rng), rng), dtype=np.float64)
                for _ in range(self.count)]
        return np.concatenate([o.reshape(-1) for o in outs])

    @property
    def batch(self):
        if traits_of(self.inner).batch is None:
            return None
        return self._batch

    def _batch(self, datasets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        m = datasets.shape[0]
        outs = [np.asarray(self.inner.batch(self._masked(datasets, rng), rng), np.float64)
                for _ in range(self.count)]
        return np.concatenate([o.reshape(m, -1) for o in outs], axis=1)
