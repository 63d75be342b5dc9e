"""Building catalogue entries (mechanisms, queries) from their config name and parameters.

The catalogues are frozen dataclasses; a few fields have another name in configs (the
documented key), e.g. a mechanism's ``p_star_value`` field is the config key ``p_star`` (a field
cannot share the name of the ``p_star(d)`` method). Both directions go through here: building
from config keys, and reporting every parameter under its config key.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

__all__ = ["build", "config_params"]


def build(catalogue: dict[str, type], name: str, params: dict, *, what: str, param: str,
          config_keys: dict[str, str], aliases: dict[str, str] | None = None):
    """``catalogue[name]`` built from ``params`` given under their config keys.

    Parameters
    ----------
    catalogue : dict
        Config name → dataclass.
    name : str
        The entry to build.
    params : dict
        Its parameters, under config keys (or the short ``aliases``).
    what, param : str
        How errors name the catalogue ("missingness kind") and the name's key ("kind").
    config_keys : dict
        Field name → config key, where they differ.
    aliases : dict, optional
        Extra accepted key → field name (e.g. ``"r"`` for ``rate``).

    Raises
    ------
    ValueError
        Unknown name (the message lists the catalogue), unknown parameter (it lists the
        allowed config keys), a missing required parameter or a bad value.
    """
    if name not in catalogue:
        allowed = ", ".join(repr(k) for k in catalogue)
        raise ValueError(f"{param} must be one of {allowed}, got {param}={name!r}")
    cls = catalogue[name]
    names = {f.name for f in fields(cls)}
    keys = {config_keys.get(n, n): n for n in names}
    aliases = aliases or {}
    kwargs = {}
    for key, value in params.items():
        field = keys.get(key) or (aliases[key] if aliases.get(key) in names else None)
        if field is None:
            allowed = ", ".join(sorted(keys)) or "(none)"
            raise ValueError(f"unknown parameter {key!r} for {what} {name!r}; allowed: {allowed}")
        kwargs[field] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"{what} {name!r}: {exc}") from None


def config_params(obj, config_keys: dict[str, str]) -> dict:
    """Every parameter of a catalogue entry under its config key (arrays as lists)."""
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        out[config_keys.get(f.name, f.name)] = v.tolist() if isinstance(v, np.ndarray) else v
    return out
