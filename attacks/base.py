"""The distinguisher protocol, defined in :mod:`audit.protocols` and re-exported here."""

from audit.protocols import Attack, AttackInput, Score, bin_representatives

__all__ = ["Attack", "AttackInput", "Score", "bin_representatives"]
