"""Declared, finite families of candidate neighbouring pairs for a black-box pair search.

A black box has no law to rank pairs with, so a ``[search]`` audit scores candidate pairs by
calling it (:mod:`audit.pipeline.search`). This module only builds the candidates: pairs of
datasets (z, z′) of n records × d features in [−B, B] (NaN = NA) that differ in record 0, the
other records 0, one list per :class:`audit.enums.PairFamily`:

- ``corners``: record 0 at two different points of {−B, 0, B}^d whose coordinates are all
  ±B or all 0 on one side: (v, −v), (v, 0) and (v, v with one coordinate flipped) for the
  corners v (2^d of them: sampled when more than the cap);
- ``nan``: record 0 at a corner or at 0 against the all-NA record (a value ↔ NA);
- ``nan-position``: record 0 at a corner against the same record with feature j NA, for each
  position j;
- ``tester``: the input patterns of the DP testers StatDP (Ding et al., CCS 2018, Table 2) and
  DP-Sniper (Bichsel et al., S&P 2021), on a one-record dataset whose record is the query
  vector x (n = 1): x = 0 against x′ = x + u·pattern with u = min(1, B) (adjacency
  ‖x − x′‖∞ ≤ 1): one above, one below, one above rest below, one below rest above, half
  above half below, all above, all below, and the X shape (x = −u on the second half of the
  entries, x′ = −u on the first half, the halves split at ⌊d/2⌋: StatDP's (1, …, 1, 0, …, 0)
  against (0, …, 0, 1, …, 1) taken about its base input (1, …, 1), as every other pattern is);
- ``list``: the user's pairs, as given;
- ``table``: a pair built around the user's own table T (n × d, NaN = NA, read by
  :func:`read_table`): z = T and z′ = T with one record i replaced by the corner +B, the
  corner −B, the all-NA record (for a release that skips NA, what removing the record is), or
  record i with the NaN pattern of another record of T; identical pairs are dropped. The
  other records are the user's, with their own NA (missing before any mask is drawn);
- ``imputation``: the pairs that hurt an imputer (:func:`audit.model.imputation_pairs.
  imputation_pair`, n ≥ 3): record 0 at +B against −B while m records have their value
  (column 0) NA, m ∈ {1, 2, 4, …} up to n − 2 and n − 1, the other observed records at 0 or
  split between ±B (so that record 0 tips their median); column 1, when d ≥ 2, a covariate on
  which record 0 is the incomplete records' nearest donor. Unlike the other families, the
  other records are not all 0.

Each family is capped at ``cap`` candidates, sampled without replacement by a seeded
generator when larger, so a search is reproducible and its cost bounded whatever d.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from audit._validate import check_positive, check_positive_int
from audit.enums import PairFamily

__all__ = ["Candidate", "candidate_pairs", "read_table", "check_user_table",
           "user_table_reason", "MAX_CANDIDATES",
           "MAX_TABLE_ENTRIES", "TESTER_PATTERNS"]

#: Most candidates one family may contribute (``search.cap`` is checked against it).
MAX_CANDIDATES = 1000
#: Most entries (n × d) of a user's table (each candidate holds two copies of it).
MAX_TABLE_ENTRIES = 10**5
#: The testers' patterns (name → the offset of x′ from x, per coordinate, for d ≥ 2).
TESTER_PATTERNS = ("one above", "one below", "one above rest below", "one below rest above",
                   "half above half below", "all above", "all below", "x shape")


@dataclass(frozen=True, eq=False)
class Candidate:
    """One candidate pair: its family, a short label, and the two datasets."""

    family: PairFamily
    label: str
    z: np.ndarray
    z_prime: np.ndarray

    def to_dict(self) -> dict:
        """Its family, label and differing record: ``z0``/``z_prime0`` its values on each
        side (record 0 in every family but ``table``, whose ``record`` says which)."""
        out = {"family": self.family.value, "label": self.label}
        i = self.record
        if i:
            out["record"] = i
        return {**out, "z0": _row(self.z[i]), "z_prime0": _row(self.z_prime[i])}

    @property
    def record(self) -> int:
        """The index of the record the two datasets differ in."""
        same = (self.z == self.z_prime) | (np.isnan(self.z) & np.isnan(self.z_prime))
        return int(np.flatnonzero(~same.all(axis=1))[0])


def _row(r: np.ndarray) -> list:
    return [None if np.isnan(v) else float(v) for v in r]


def _dataset(row: np.ndarray, n: int) -> np.ndarray:
    z = np.zeros((n, row.shape[0]))
    z[0] = row
    return z


def _corners(d: int, bound: float, cap: int, rng: np.random.Generator) -> np.ndarray:
    """At most ``cap`` corners of {−B, B}^d (all of them when 2^d ≤ cap), in a fixed order."""
    if d <= 20 and 2**d <= cap:
        return np.array(list(itertools.product((-bound, bound), repeat=d)))
    return np.where(rng.random((cap, d)) < 0.5, -bound, bound)


def _capped(items: list, cap: int, rng: np.random.Generator) -> list:
    if len(items) <= cap:
        return items
    keep = np.sort(rng.choice(len(items), size=cap, replace=False))
    return [items[i] for i in keep]


def _corner_pairs(d: int, bound: float, cap: int, rng) -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    for v in _corners(d, bound, cap, rng):
        out.append((f"{_short(v)} vs {_short(-v)}", v, -v))
        out.append((f"{_short(v)} vs 0", v, np.zeros(d)))
        if d > 1:
            w = v.copy()
            w[0] = -w[0]
            out.append((f"{_short(v)} vs {_short(w)}", v, w))
    unique: dict[tuple, tuple] = {}
    for lab, a, b in out:  # one of (v, −v) and (−v, v): the pair is unordered
        unique.setdefault(tuple(sorted((tuple(a), tuple(b)))), (lab, a, b))
    return _capped(list(unique.values()), cap, rng)


def _nan_pairs(d: int, bound: float, cap: int, rng) -> list:
    rows = [*_corners(d, bound, cap, rng), np.zeros(d)]
    return _capped([(f"{_short(v)} vs NA", v, np.full(d, np.nan)) for v in rows], cap, rng)


def _nan_position_pairs(d: int, bound: float, cap: int, rng) -> list:
    out = []
    for v in _corners(d, bound, cap, rng):
        for j in range(d):
            w = v.copy()
            w[j] = np.nan
            out.append((f"{_short(v)} vs feature {j} NA", v, w))
    return _capped(out, cap, rng)


def _tester_offsets(d: int) -> dict[str, np.ndarray]:
    one = np.zeros(d)
    one[0] = 1.0
    rest = 1.0 - one
    half = np.where(np.arange(d) < d // 2, 1.0, -1.0)  # StatDP's: the first ⌊d/2⌋ above
    return {"one above": one, "one below": -one, "one above rest below": one - rest,
            "one below rest above": rest - one, "half above half below": half,
            "all above": np.ones(d), "all below": -np.ones(d)}


def _tester_pairs(d: int, bound: float, cap: int, rng) -> list:
    u = min(1.0, bound)
    x = np.zeros(d)
    out = [(name, x, u * off) for name, off in _tester_offsets(d).items()]
    if d >= 2:  # StatDP's X shape about its base: the second half one below, or the first
        first = np.arange(d) < d // 2
        out.append(("x shape", np.where(first, 0.0, -u), np.where(first, -u, 0.0)))
    seen, keep = set(), []
    for lab, a, b in out:  # d = 1 makes some patterns coincide
        key = (tuple(a), tuple(b))
        if key not in seen:
            seen.add(key)
            keep.append((lab, a, b))
    return _capped(keep, cap, rng)


def _short(v: np.ndarray) -> str:
    def one(x: float) -> str:
        return "NA" if np.isnan(x) else f"{x:g}"
    return "(" + ", ".join(one(x) for x in v[:6]) + (", ...)" if v.size > 6 else ")")


def _imputation_candidates(n: int, d: int, bound: float, cap: int, rng) -> list[Candidate]:
    from audit.model.imputation_pairs import OTHERS, imputation_pair

    if n < 3:
        raise ValueError(f"the family 'imputation' needs n >= 3 (a differing record, an "
                         f"incomplete one and an observed one), got n={n}")
    ms = sorted({*(2**i for i in range(n.bit_length()) if 2**i <= n - 2), n - 1})
    out = []
    for m in ms:
        for others in OTHERS if n - m - 1 >= 2 else OTHERS[:1]:  # split = zero below 2
            z, zp = imputation_pair(n, m, bound, others=others, d=d)
            out.append(Candidate(PairFamily.IMPUTATION, f"m={m} incomplete, others {others}",
                                 z, zp))
    return _capped(out, cap, rng)


_BUILDERS = {PairFamily.CORNERS: _corner_pairs, PairFamily.NAN: _nan_pairs,
             PairFamily.NAN_POSITION: _nan_position_pairs, PairFamily.TESTER: _tester_pairs}


def read_table(path: str) -> np.ndarray:
    """The user's table at ``path``: a ``.npy`` array, or a comma-separated text file of
    numbers (an empty field, ``nan`` or ``NA`` = NA; a first line that is not numbers is a
    header), as an (n, d) float array of at most :data:`MAX_TABLE_ENTRIES` entries.

    Raises
    ------
    ValueError
        Naming ``search.table``, when the file cannot be read, is not a 2-D numeric table, or
        is too large.
    """
    import pathlib

    file = pathlib.Path(path)
    try:
        if file.suffix == ".npy":
            table = np.load(file, allow_pickle=False)
        else:
            with file.open(encoding="utf-8") as fh:
                lines = [ln for ln in fh.read().splitlines() if ln.strip()]
            table = np.array([[_number(x) for x in ln.split(",")] for ln in lines[
                0 if lines and _numeric(lines[0]) else 1:]], dtype=np.float64)
    except (OSError, ValueError) as exc:
        raise ValueError(f"search.table must be a readable table of numbers (.csv or .npy), "
                         f"got search.table={path!r}: {exc}") from None
    if table.ndim != 2 or table.size == 0 or table.dtype.kind not in "fiu":
        raise ValueError(f"search.table must hold a non-empty 2-D numeric table (records × "
                         f"features), got shape {table.shape} from search.table={path!r}")
    if table.size > MAX_TABLE_ENTRIES:
        raise ValueError(f"search.table must hold at most {MAX_TABLE_ENTRIES} entries, got "
                         f"{table.shape[0]} × {table.shape[1]} in search.table={path!r}")
    return table.astype(np.float64)


def _number(field: str) -> float:
    field = field.strip()
    return np.nan if field.lower() in ("", "na", "nan") else float(field)


def _numeric(line: str) -> bool:
    try:
        [_number(x) for x in line.split(",")]
    except ValueError:
        return False
    return True


def _table_pairs(table: np.ndarray, bound: float, cap: int, rng) -> list[Candidate]:
    """z = the user's table, z′ = it with one record replaced (module docstring), at most
    ``cap`` of them (sampled)."""
    n, d = table.shape
    patterns = np.unique(np.isnan(table), axis=0)
    out: dict[bytes, Candidate] = {}
    for i in range(n):
        rec = table[i]
        options = [("+B", np.full(d, bound)), ("-B", np.full(d, -bound)),
                   ("NA", np.full(d, np.nan))]
        options += [(f"NA at {np.flatnonzero(m).tolist()}", np.where(m, np.nan, rec))
                    for m in patterns if m.any() and not m.all()]
        for name, new in options:
            if np.array_equal(new, rec, equal_nan=True):
                continue
            z_prime = table.copy()
            z_prime[i] = new
            key = z_prime.tobytes()
            out.setdefault(key, Candidate(PairFamily.TABLE, f"record {i} {_short(rec)} vs "
                                          f"{name}", table, z_prime))
    return _capped(list(out.values()), cap, rng)


def candidate_pairs(families, n: int, d: int, bound: float, cap: int, seed: int = 0,
                    pairs=(), table: np.ndarray | None = None) -> list[Candidate]:
    """The candidates of each family, in family order, each family capped at ``cap``.

    Parameters
    ----------
    families : sequence of PairFamily or str
        Non-empty, without repeats.
    n, d : int
        Records and features, ≥ 1 (``tester`` needs n = 1: its record is the query vector).
    bound : float
        B > 0: every value of a candidate lies in [−B, B].
    cap : int
        In [1, :data:`MAX_CANDIDATES`].
    seed : int
        Seeds the sampling of families larger than ``cap``.
    pairs : sequence of (z, z′)
        The ``list`` family's pairs, each of shape (n, d) (NaN = NA).
    table : array of shape (n, d), optional
        The ``table`` family's table (NaN = NA, values in [−B, B]).

    Raises
    ------
    ValueError
        On an unknown or repeated family, a bad size, ``tester`` with n > 1, ``imputation``
        with n < 3, ``list``
        without pairs (or pairs without ``list``), or a listed pair of the wrong shape.
    """
    fams = [PairFamily.parse(f, "search.families") for f in families]
    if not fams or len(set(fams)) != len(fams):
        raise ValueError(f"search.families must be a non-empty list without repeats, got "
                         f"{[f.value for f in fams]}")
    n, d = check_positive_int(n, "n"), check_positive_int(d, "d")
    B = check_positive(bound, "bound")
    cap = check_positive_int(cap, "search.cap")
    if cap > MAX_CANDIDATES:
        raise ValueError(f"search.cap must be in [1, {MAX_CANDIDATES}], got search.cap={cap}")
    if PairFamily.TESTER in fams and n != 1:
        raise ValueError(f"the family 'tester' needs a one-record dataset (its record is the "
                         f"query vector): n must be 1, got n={n}")
    if (PairFamily.LIST in fams) != bool(len(pairs)):
        raise ValueError("search.pairs must be given exactly when search.families lists "
                         "'list'")
    if (PairFamily.TABLE in fams) != (table is not None):
        raise ValueError("search.table must be given exactly when search.families lists "
                         "'table'")
    if table is not None:
        check_user_table(table, n, d, B)
    rng = np.random.default_rng(seed)
    out = []
    for fam in fams:
        if fam is PairFamily.LIST:
            out += [_listed(i, z, zp, n, d) for i, (z, zp) in enumerate(pairs)]
            continue
        if fam is PairFamily.TABLE:
            out += _table_pairs(np.asarray(table, dtype=np.float64), B, cap, rng)
            continue
        if fam is PairFamily.IMPUTATION:
            out += _imputation_candidates(n, d, B, cap, rng)
            continue
        for label, a, b in _BUILDERS[fam](d, B, cap, rng):
            out.append(Candidate(fam, label, _dataset(a, n), _dataset(b, n)))
    return out


def user_table_reason(table: np.ndarray, n: int, d: int, bound: float) -> str | None:
    """Why a user's table cannot be searched around (None: it can): it must be (n, d) with
    every value in [−B, B] or NA. The answer of ``audit.pipeline.parts.SearchedPair``."""
    t = np.asarray(table, dtype=np.float64)
    if t.shape != (n, d):
        return (f"search.table must have scenario.n × scenario.d = {n} × {d} entries "
                f"(records × features), got {t.shape[0]} × {t.shape[1]}")
    seen = t[~np.isnan(t)]
    if seen.size and not np.all(np.abs(seen) <= bound):
        return (f"search.table must hold values in [-bound, bound] = [{-bound:g}, {bound:g}] "
                f"(scenario.bound) or NA, got values in [{seen.min():g}, {seen.max():g}]")
    return None


def check_user_table(table: np.ndarray, n: int, d: int, bound: float) -> None:
    """Refuse a user's table that is not (n, d) with every value in [−B, B] (or NA): the
    :func:`user_table_reason` as a ``ValueError``."""
    reason = user_table_reason(table, n, d, bound)
    if reason is not None:
        raise ValueError(reason)


def _listed(i: int, z, z_prime, n: int, d: int) -> Candidate:
    a = np.asarray(z, dtype=np.float64)
    b = np.asarray(z_prime, dtype=np.float64)
    if a.shape != (n, d) or b.shape != (n, d):
        raise ValueError(f"search.pairs[{i}] must be two datasets of shape ({n}, {d}), got "
                         f"shapes {a.shape} and {b.shape}")
    return Candidate(PairFamily.LIST, f"pair {i}", a, b)
