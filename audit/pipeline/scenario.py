"""What a config's ``[scenario]`` means outside an audit's sampling: the scale of its release,
its keys as the user wrote them (for messages), and the setting it describes for the
accountant's exact worst case (:func:`setting_from_config`, ``python -m audit bound --config``).

The theory takes a setting (:class:`~audit.theory.worst_case.Setting` of a sum,
:class:`~audit.theory.histogram.HistogramSetting`, the means of
:mod:`audit.theory.observed_mean`); reading a config into one, and routing it to its worst
case (:func:`worst_case_of`), is this module's.
"""

from __future__ import annotations

import math
import sys

from audit.enums import Calibration, MaskRegime, NoiseKind
from audit.theory.histogram import HistogramSetting
from audit.theory.observed_mean import ObservedMeanSetting, PublicCountMean
from audit.theory.persistent import persistent_refusal
from audit.theory.worst_case import MAX_GAUSSIAN_SCALE, Setting, substitution_sensitivity

#: every setting a config can describe for the accountant
AnySetting = Setting | HistogramSetting | ObservedMeanSetting | PublicCountMean

__all__ = ["setting_from_config", "worst_case_of", "release_scale", "scenario_keys",
           "check_release_scale"]


def setting_from_config(cfg) -> AnySetting:
    """The :class:`Setting` of an audit config (``bound --config``), or the
    :class:`~audit.theory.histogram.HistogramSetting` of ``query = "histogram"``, or the mean
    over the observed entries of ``scenario.count`` (:mod:`audit.theory.observed_mean`).

    Supported: ``[scenario] query = "histogram"`` over ``d`` categories (one-hot records;
    ``na_category`` adds a bin of the missing entries), its noise calibrated to the
    substitution sensitivity of a histogram (ℓ1 2, ℓ2 √2); ``[scenario] query = "sum"``
    over ``d`` features, each in ``domain`` (default [−bound, bound]) with missing entries
    read as ``na_value`` (default 0); missingness
    ``mcar-row`` (record-level, q = p*) or ``mcar-iid`` with d = 1 (q = 1 − rate); the
    release's noise calibrated to the substitution sensitivity
    d·max(hi − lo, |hi − na|, |lo − na|); ``[releases]`` count and masks (default one release;
    persistent masks with their persistence: k ≤ 12).

    Raises
    ------
    ValueError
        For anything else, naming the key.
    """
    sc = cfg.scenario
    if sc.query not in ("sum", "histogram"):
        raise ValueError(f"bound --config computes the worst case of a sum or a histogram: "
                         f"scenario.query must be 'sum' or 'histogram', got scenario.query="
                         f"{sc.query!r}")
    if sc.query == "histogram":
        return _histogram_setting(cfg)
    if sc.count is not None:
        return _mean_setting(cfg)
    if sc.na_category:
        raise ValueError("bound --config: scenario.na_category applies to query = 'histogram', "
                         f"got scenario.na_category=true with scenario.query={sc.query!r}")
    if sc.query_params:
        raise ValueError("bound --config: scenario.query_params is not used by the 'sum' query, "
                         f"got scenario.query_params={sc.query_params!r}")
    q = _observation(cfg)
    lo, hi = sc.value_domain
    na = sc.na_value
    sens = sc.d * substitution_sensitivity(lo, hi, na)
    scale = release_scale(sc, sens)
    k, masks, r = 1, MaskRegime.SHARED, None
    if cfg.releases is not None:
        k, masks, r = cfg.releases.count, cfg.releases.masks, cfg.releases.persistence
    if masks is MaskRegime.PERSISTENT:
        reason = persistent_refusal(sc.noise, k, noise_name="scenario.noise",
                                    releases_name="releases.count")
        if reason:
            raise ValueError(f"bound --config: {reason}")
    return Setting(sc.noise, scale, (sc.d * lo, sc.d * hi), sc.d * na, q, k, masks, r)


def worst_case_of(setting: AnySetting, delta: float):
    """The worst case (:class:`~audit.theory.worst_case.WorstCase`) of a setting read from a
    config, whichever statistic it describes."""
    from audit.theory.histogram import histogram_worst_case
    from audit.theory.observed_mean import observed_mean_worst_case, public_count_worst_case
    from audit.theory.worst_case import worst_case

    if isinstance(setting, HistogramSetting):
        return histogram_worst_case(setting, delta)
    if isinstance(setting, ObservedMeanSetting):
        return observed_mean_worst_case(setting, delta)
    if isinstance(setting, PublicCountMean):
        return public_count_worst_case(setting, delta)
    return worst_case(setting, delta)


def _mean_setting(cfg) -> ObservedMeanSetting | PublicCountMean:
    """The mean over the observed entries of one column (``scenario.count``: its count
    private, a noisy count at half the budget, or public): a missing entry is skipped, so
    ``na_value`` is not read."""
    sc = cfg.scenario
    if sc.query != "sum" or sc.d != 1:
        raise ValueError("bound --config: scenario.count makes the release the mean over the "
                         "observed entries of one column: it needs scenario.query = 'sum' and "
                         f"scenario.d = 1, got scenario.query={sc.query!r}, scenario.d={sc.d}")
    if sc.na_value != 0.0 or sc.query_params:
        raise ValueError("bound --config: a mean over the observed entries skips a missing "
                         "entry; scenario.na_value and scenario.query_params are not read, got "
                         f"scenario.na_value={sc.na_value!r}, "
                         f"scenario.query_params={sc.query_params!r}")
    q = _observation(cfg)
    k, masks = 1, MaskRegime.SHARED
    if cfg.releases is not None:
        k, masks = cfg.releases.count, cfg.releases.masks
    if sc.count == "public":
        return PublicCountMean(q, k, masks)
    try:
        return ObservedMeanSetting(sc.noise, sc.epsilon, sc.delta or 0.0, sc.value_domain, q,
                                   k, masks)
    except ValueError as exc:
        raise ValueError(f"bound --config: {exc}") from None


def _observation(cfg) -> float:
    """q of a config's record-level missingness (``bound --config``)."""
    sc, miss = cfg.scenario, cfg.missingness
    mech, _ = cfg.components()
    if miss.kind == "mcar-row" or (miss.kind == "mcar-iid" and sc.d == 1):
        q = mech.p_star(sc.d)
    else:
        raise ValueError("bound --config supports record-level missingness: missingness.kind "
                         "must be 'mcar-row' (or 'mcar-iid' with scenario.d = 1), got "
                         f"missingness.kind={miss.kind!r} with scenario.d={sc.d} (feature-wise "
                         "masks: use the theorem rows of `bound`)")
    if q == 0.0:
        raise ValueError("bound --config needs a record that can be observed (p* > 0), got "
                         f"p* = 0 from missingness {miss.kind!r}")
    return q


def _histogram_setting(cfg) -> HistogramSetting:
    """A histogram of ``scenario.d`` categories: a record is one-hot (or missing entirely),
    its noise calibrated to the histogram's substitution sensitivity (one count moves
    between two bins: ℓ1 2 for Laplace, ℓ2 √2 for Gaussian)."""
    sc = cfg.scenario
    if sc.domain is not None or sc.na_value != 0.0:
        raise ValueError("bound --config: a histogram's records are categories; "
                         "scenario.domain and scenario.na_value are not read, got "
                         f"scenario.domain={sc.domain!r}, scenario.na_value={sc.na_value!r}")
    if sc.d < 2:
        raise ValueError(f"bound --config: a histogram needs at least 2 categories, got "
                         f"scenario.d={sc.d}")
    q = _observation(cfg)
    scale = release_scale(sc, 2.0 if sc.noise is NoiseKind.LAPLACE else math.sqrt(2.0))
    k, masks = 1, MaskRegime.SHARED
    if cfg.releases is not None:
        k, masks = cfg.releases.count, cfg.releases.masks
    if masks is MaskRegime.PERSISTENT:
        raise ValueError("bound --config: a histogram's masks must be 'shared' or 'fresh', "
                         "got releases.masks='persistent'")
    return HistogramSetting(sc.noise, scale, q, k, masks, sc.na_category)


def release_scale(sc, sensitivity: float) -> float:
    """b or σ of the scenario's release at ``sensitivity`` (its own calibration)."""
    from audit.theory.calibration import (
        gaussian_sigma_analytic,
        gaussian_sigma_classical,
        laplace_scale,
    )

    if sc.noise is NoiseKind.LAPLACE:
        scale = laplace_scale(sensitivity, sc.epsilon)
    elif sc.calibration is Calibration.ANALYTIC:
        scale = gaussian_sigma_analytic(sensitivity, sc.epsilon, sc.delta)
    else:
        scale = gaussian_sigma_classical(sensitivity, sc.epsilon, sc.delta)
    return check_release_scale(sc, scale)


def scenario_keys(sc) -> str:
    """``scenario.query = 'linear', scenario.query_params.weights = [...], scenario.d = 1,
    scenario.n = 20``: the keys of a config's ``[scenario]`` that set its query's constants,
    as the user wrote them (for messages)."""
    params = "".join(f", scenario.query_params.{k} = {v!r}" for k, v in sc.query_params.items())
    return f"scenario.query = {sc.query!r}{params}, scenario.d = {sc.d}, scenario.n = {sc.n}"


def check_release_scale(sc, scale: float) -> float:
    """``scale``, the noise scale calibrated for the config scenario ``sc``, refused (naming
    ``scenario.epsilon``) where it is not a finite float, or, for a Gaussian, above
    :data:`MAX_GAUSSIAN_SCALE` (every Gaussian law and theorem squares σ)."""
    top = MAX_GAUSSIAN_SCALE if sc.noise is NoiseKind.GAUSSIAN else sys.float_info.max
    if math.isfinite(scale) and scale <= top:
        return scale
    # the scale is inversely proportional to ε (exactly so for Laplace and the classical
    # Gaussian calibration), so this ε brings it back to the largest scale allowed
    lowest = sc.epsilon * (scale / top) if math.isfinite(scale) else math.inf
    raise ValueError(
        f"scenario.epsilon must be at least about {lowest:.4g} for scenario.bound = "
        f"{sc.bound!r} and {scenario_keys(sc)} (the {sc.noise.value} scale it calibrates, "
        f"{scale:.4g}, must be at most {top:.4g}), got scenario.epsilon={sc.epsilon!r}")
