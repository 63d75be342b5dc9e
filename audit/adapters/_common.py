"""What every library adapter shares: parameter checks, the data check, lazy library imports.

Every error is a ``ValueError`` whose message starts with the target (``"opendp:sum: ..."``)
and names the parameter at fault.
"""

from __future__ import annotations

import importlib
import math
from importlib import metadata
from numbers import Integral, Real
from types import ModuleType

import numpy as np

from audit._validate import parse_enum
from audit.adapters.protocol import REQUIRED
from audit.enums import NoiseKind

#: the optional extra that installs every library an adapter wraps
INSTALL_HINT = 'pip install -e ".[libraries]"'


def require(module: str, distribution: str, target: str) -> ModuleType:
    """Import ``module`` of the library an adapter wraps, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(
            f"{target}: the library {distribution!r} is not installed or cannot be imported "
            f"({exc}); install the 'libraries' extra: {INSTALL_HINT}") from None


def version(distribution: str) -> str:
    """The installed version of ``distribution`` ('?' when unknown)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:  # pragma: no cover - imported but not installed
        return "?"


def check_params(target: str, params: dict | None, accepted: dict[str, object]) -> dict:
    """``params`` completed with the defaults in ``accepted`` (name -> default or
    :data:`~audit.adapters.protocol.REQUIRED`; a target's ``Target.accepted()``).

    Raises ValueError for an unknown name (listing those accepted) or a missing required one.
    """
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise ValueError(f"{target}: params must be a dict, got params={params!r}")
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"{target}: unknown parameter {unknown[0]!r}; accepted: "
                         f"{', '.join(accepted)}")
    out = {}
    for name, default in accepted.items():
        if name in params:
            out[name] = params[name]
        elif default is REQUIRED:
            raise ValueError(f"{target}: parameter {name!r} is required")
        else:
            out[name] = default
    return out


def check_bounds(target: str, bounds: object) -> tuple[float, float]:
    """``bounds`` as a pair of finite floats lo < hi."""
    msg = (f"{target}: parameter 'bounds' must be a pair (lo, hi) of finite numbers with "
           f"lo < hi, got bounds={bounds!r}")
    try:
        lo, hi = bounds  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(msg) from None
    if not all(isinstance(v, Real) and not isinstance(v, bool) for v in (lo, hi)):
        raise ValueError(msg)
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(msg)
    return lo, hi


#: The smallest epsilon Google's C++ differential-privacy library accepts (python-dp and
#: PipelineDP run it): it raises "INVALID_ARGUMENT: Epsilon must be at least 2^-50" on the
#: first call with a smaller one.
MIN_GOOGLE_EPSILON = 2.0**-50


def check_google_epsilon(target: str, epsilon: float, eps_lib: float) -> None:
    """Refuse, before any call, a claim ``epsilon`` whose library budget ``eps_lib`` (ε/2 for
    a substitution run as add/remove) is below :data:`MIN_GOOGLE_EPSILON`."""
    if not eps_lib >= MIN_GOOGLE_EPSILON:
        lowest = epsilon * MIN_GOOGLE_EPSILON / eps_lib
        raise ValueError(f"{target}: epsilon must be at least {lowest:.4g} (the library "
                         f"refuses the ε it runs with, {eps_lib:.4g}, below 2^-50), got "
                         f"epsilon={epsilon!r}")


def check_choice(target: str, name: str, value: object, choices: tuple[str, ...]) -> str:
    """``value`` as one of the strings ``choices``."""
    if isinstance(value, str) and value.lower() in choices:
        return value.lower()
    raise ValueError(f"{target}: parameter {name!r} must be one of "
                     f"{', '.join(repr(c) for c in choices)}, got {name}={value!r}")


def check_noise(target: str, value: object) -> NoiseKind:
    """The noise kind, 'laplace' or 'gaussian'."""
    try:
        return parse_enum(NoiseKind, value, "noise")
    except ValueError as exc:
        raise ValueError(f"{target}: parameter {exc}") from None


def check_noise_delta(target: str, noise: NoiseKind, delta: float) -> None:
    """Refuse a δ the noise cannot have: Gaussian noise needs δ ∈ (0, 1), Laplace noise is pure
    ε-DP (δ = 0)."""
    if noise is NoiseKind.GAUSSIAN and not 0.0 < delta < 1.0:
        raise ValueError(f"{target}: Gaussian noise needs delta in (0, 1), got delta={delta!r}")
    if noise is NoiseKind.LAPLACE and delta != 0.0:
        raise ValueError(f"{target}: Laplace noise is pure ε-DP; delta must be 0, got "
                         f"delta={delta!r}")


def check_column(target: str, value: object) -> int | None:
    """None (every entry of a record) or a column index ≥ 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < 0:
        raise ValueError(f"{target}: parameter 'column' must be None or an integer >= 0, "
                         f"got column={value!r}")
    return int(value)


def check_one_column(target: str, value: object, why: str) -> int:
    """A column index ≥ 0, for a target that reads one column (``why`` says so: "the table
    has one column"); None (every entry of a record) is refused."""
    column = check_column(target, value)
    if column is None:
        raise ValueError(f"{target}: parameter 'column' must be an integer >= 0 ({why}), got "
                         f"column=None")
    return column


def check_real_param(target: str, name: str, value: object) -> float:
    """A finite real parameter."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{target}: parameter {name!r} must be a finite number, "
                         f"got {name}={value!r}")
    return float(value)


def check_increasing(target: str, name: str, value: object, least: int) -> list[float]:
    """``value`` as a list of at least ``least`` strictly increasing finite floats."""
    msg = (f"{target}: parameter {name!r} must be a sequence of at least {least} strictly "
           f"increasing finite numbers, got {name}={value!r}")
    try:
        out = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(msg) from None
    if len(out) < least or not all(isinstance(v, Real) and not isinstance(v, bool)
                                   and math.isfinite(v) for v in out):
        raise ValueError(msg)
    out = [float(v) for v in out]
    if any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise ValueError(msg)
    return out


def check_alpha(target: str, value: object) -> float:
    """A quantile's level alpha in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{target}: parameter 'alpha' must be a number in [0, 1], got "
                         f"alpha={value!r}")
    return float(value)


def as_data(target: str, data: object) -> np.ndarray:
    """One dataset as a float64 array (n, d), n, d ≥ 1; NaN = missing."""
    x = np.asarray(data, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{target}: data must have shape (n, d) with n, d >= 1, "
                         f"got shape {x.shape}")
    return x


def as_stack(target: str, datasets: object) -> np.ndarray:
    """A stack of datasets as a float64 array (m, n, d), m ≥ 0, n, d ≥ 1 (a batched form's
    argument)."""
    xs = np.asarray(datasets, dtype=np.float64)
    if xs.ndim != 3 or xs.shape[1] == 0 or xs.shape[2] == 0:
        raise ValueError(f"{target}: datasets must have shape (m, n, d) with n, d >= 1, "
                         f"got shape {xs.shape}")
    return xs


def selected(target: str, x: np.ndarray, column: int | None) -> np.ndarray:
    """The entries the statistic runs over: column ``column`` of ``x`` (n,), or every entry
    record by record, row-major (n·d,)."""
    if column is None:
        return x.reshape(-1)
    if column >= x.shape[1]:
        raise ValueError(f"{target}: parameter 'column' is {column} but the data has "
                         f"{x.shape[1]} columns")
    return x[:, column]
