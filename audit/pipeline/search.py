"""Pair search for black boxes: ``[search]`` finds the neighbouring pair an implementation
audit is run on, by calling the implementation.

A black box has no output law to rank pairs with (the model's search,
:func:`audit.model.neighbours.worst_case_pair`, ranks them exactly). Here every candidate of the
declared families (:func:`audit.model.pair_families.candidate_pairs`) is scored by a short
implementation audit of its own at the policy's ``search_confidence`` (a lower bound that
penalises sparse regions: a ranking score, not a result; its pilot the black-box rule of
:mod:`audit.policy` on the candidate's calls), on random streams no other part of the
audit uses (:func:`search_key`). The calls go where the ranking is in doubt, by successive
halving (:func:`audit.pipeline.search_config.schedule`; Karnin, Koren and Somekh 2013): round 0
scores every candidate with ``search.calls`` calls per side (plus that audit's pilot); while a
round scored more than two, the best max(2, ⌈n/ETA⌉) of its n are scored again with ETA times
the calls on fresh streams. The last round's best candidate (the highest score; among equal
scores, the highest plug-in estimate) becomes the audit's pair, and the audit then runs as with
a given pair on its own streams: the bound it reports is valid for that pair, since the choice
depends only on calls the bound never sees (a split; no union bound is needed for one finalist).

The report (JSON ``search``) lists the families, cap, calls and rounds, every candidate with
its score in each round it reached (``scores``; ``score`` is the last), the chosen one, the
calls the search made and its seconds.

References
----------
Z. Karnin, T. Koren, O. Somekh. Almost Optimal Exploration in Multi-Armed Bandits. ICML 2013
(sequential halving).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from audit.enums import AuditMode
from audit.model.pair_families import Candidate, candidate_pairs
from audit.pipeline.config import AuditConfig, PairConfig
from audit.pipeline.search_config import ETA, schedule
from audit.policy import DEFAULT_POLICY, AuditPolicy

__all__ = ["search_key", "pilot_calls", "search_pair", "searched_config",
           "first_candidate_config", "SearchOutcome", "SearchReport", "CandidateScore"]

#: Mixed into the search streams' keys (no audit stream is keyed by a list containing it).
_SEARCH_TAG = 0x5EA2C4


def search_key(seed: int, index: int, round_: int = 0) -> int:
    """The random-stream key of candidate ``index``'s score in round ``round_``: derived from
    the audit's seed by ``numpy.random.SeedSequence``, so the search is reproducible, each
    round's calls are fresh, and no call is shared with the audit's pilot or main run (keyed
    by the seed itself)."""
    entropy = [int(seed), _SEARCH_TAG, int(index)] + ([int(round_)] if round_ else [])
    state = np.random.SeedSequence(entropy).generate_state(2)
    return int((int(state[0]) << 30) ^ int(state[1]))


def pilot_calls(calls: int, policy: AuditPolicy = DEFAULT_POLICY) -> int:
    """A candidate audit's pilot: ``policy``'s black-box pilot rule on its ``calls``
    (:meth:`audit.policy.AuditPolicy.pilot_size`)."""
    return policy.pilot_size(calls, black_box=True)


@dataclasses.dataclass(frozen=True)
class CandidateScore:
    """A candidate's score in one round: its ε_lower at the search's confidence, its plug-in
    estimate (the tie-break) and the calls per side the score cost (pilot included)."""

    eps_lower: float
    eps_point: float | None
    calls: int

    @classmethod
    def of(cls, result) -> CandidateScore:
        """The score an :class:`audit.pipeline.results.AuditResult` of the candidate gives."""
        return cls(float(result.eps_lower), result.eps_point,
                   int(result.trials + result.pilot_trials))


@dataclasses.dataclass(frozen=True)
class SearchReport:
    """How the search chose the pair: the result's JSON ``search`` entry (:meth:`to_dict`, the
    keys the docs list). ``candidates`` are the rows of every candidate (family, label, the
    pair's differing records, ``scores`` per round reached, the last ``score`` and its
    ``eps_point``); ``chosen`` the index of the pair audited."""

    families: tuple
    cap: int
    calls: int
    rounds: tuple
    candidates: tuple
    chosen: int
    calls_per_side: int
    seconds: float
    eta: int = ETA
    #: of the candidates' scores (``AuditPolicy.search_confidence`` of the audit's policy,
    #: set by :func:`search_pair`)
    confidence: float | None = None
    validity: str = "the chosen pair is audited on fresh calls (a split)"

    @property
    def best(self) -> dict:
        """The chosen candidate's row."""
        return self.candidates[self.chosen]

    def to_dict(self) -> dict:
        return {"families": list(self.families), "cap": self.cap, "calls": self.calls,
                "rounds": [{"candidates": n, "calls": c} for n, c in self.rounds],
                "eta": self.eta, "confidence": self.confidence,
                "candidates": [dict(c) for c in self.candidates], "chosen": self.chosen,
                "calls_per_side": self.calls_per_side, "seconds": self.seconds,
                "validity": self.validity}


@dataclasses.dataclass(frozen=True)
class SearchOutcome:
    """The chosen pair and the report (see the module docstring)."""

    z: np.ndarray
    z_prime: np.ndarray
    report: SearchReport


def _candidates(cfg: AuditConfig) -> list[Candidate]:
    """The candidates of ``cfg.search`` on ``cfg``'s domain, sampled from its seed."""
    s, sc = cfg.search, cfg.scenario
    return candidate_pairs(s.families, sc.n, sc.d, sc.bound, s.cap, seed=cfg.audit.seed,
                           pairs=s.pairs, table=s.data)


def _point(row: dict) -> float:
    p = row["eps_point"]
    return -np.inf if p is None or np.isnan(p) else float(p)


def _candidate_config(cfg: AuditConfig, cand: Candidate, key: int, calls: int) -> AuditConfig:
    pair = PairConfig(cand.z.tolist(), cand.z_prime.tolist())
    audit = dataclasses.replace(cfg.audit, trials=calls, seed=key,
                                pilot_trials=pilot_calls(calls, cfg.policy),
                                confidence=cfg.policy.search_confidence, mode=AuditMode.FIXED,
                                checkpoint=None)
    # (a [claim] is tested on the audit of the chosen pair, not on every candidate's)
    return dataclasses.replace(cfg, pair=pair, search=None, audit=audit, claim=None,
                               name=f"{cfg.name} [search: {cand.label}]")


def search_pair(cfg: AuditConfig, score: Callable[[AuditConfig], CandidateScore]
                ) -> SearchOutcome:
    """Score every candidate of ``cfg.search`` on the search split and return the best.

    Parameters
    ----------
    cfg : AuditConfig
        A validated config with ``[search]``.
    score : callable
        ``score(candidate_cfg) -> CandidateScore``: a candidate's short audit on its own
        streams (the runner hands in one that audits the implementation; the search never
        calls the runner itself).

    Raises
    ------
    ValueError
        If ``cfg`` has no ``[search]`` table.
    """
    s = cfg.search
    if s is None:
        raise ValueError("search_pair needs a config with a [search] table")
    t0 = time.perf_counter()
    cands = _candidates(cfg)
    rounds = schedule(len(cands), s.calls)
    rows = [{**cand.to_dict(), "scores": [], "score": None, "eps_point": None}
            for cand in cands]
    alive, calls, r = list(range(len(cands))), 0, 0
    while r < len(rounds):
        round_calls = rounds[r][1]
        if r:  # the previous round's best go on
            alive = sorted(alive, key=lambda i: _rank(rows, i), reverse=True)[:rounds[r][0]]
        for i in alive:
            got = score(_candidate_config(cfg, cands[i], search_key(cfg.audit.seed, i, r),
                                          round_calls))
            calls += got.calls
            rows[i]["scores"].append(got.eps_lower)
            rows[i].update(score=got.eps_lower, eps_point=got.eps_point)
        rounds = _extended(rounds, r, [rows[i]["score"] for i in alive])
        r += 1
    best = max(alive, key=lambda i: _rank(rows, i))
    report = SearchReport(tuple(f.value for f in s.families), s.cap, s.calls, tuple(rounds),
                          tuple(rows), best, calls, time.perf_counter() - t0,
                          confidence=cfg.policy.search_confidence)
    return SearchOutcome(cands[best].z, cands[best].z_prime, report)


def _extended(rounds: list, r: int, scores: list) -> list:
    """The schedule after round ``r``: unchanged, unless every candidate of that round scored
    0 (nothing to rank but noise) and rounds remain; then the remaining rounds' calls go to
    one last round over all of round ``r``'s candidates (the same total calls, no halving on
    noise)."""
    if r + 1 >= len(rounds) or any(sc > 0 for sc in scores):
        return rounds
    n = rounds[r][0]
    left = sum(k * c for k, c in rounds[r + 1:])
    more = left // n
    if more <= rounds[r][1]:
        return rounds  # too little left to score them all with more calls: halve as before
    return [*rounds[:r + 1], (n, more)]


def _rank(rows: list[dict], i: int) -> tuple:
    """Candidate ``i``'s rank in its last round: the highest score; among equal scores (at a
    small budget often all 0) the highest plug-in estimate; then the first."""
    return rows[i]["score"], _point(rows[i]), -i


def first_candidate_config(cfg: AuditConfig) -> AuditConfig:
    """``cfg`` on its search's first candidate pair, with ``[audit]``'s budget: what the
    command line times before the search (a pair of the same shape costs the same calls)."""
    first = _candidates(cfg)[0]
    return dataclasses.replace(cfg, pair=PairConfig(first.z.tolist(), first.z_prime.tolist()),
                               search=None)


def searched_config(cfg: AuditConfig, score: Callable[[AuditConfig], CandidateScore]
                    ) -> tuple[AuditConfig, SearchReport]:
    """``cfg`` with the pair its ``[search]`` finds (:func:`search_pair`): a config with that
    ``[pair]`` and no ``[search]``, audited like any config with a given pair, and the
    search's report (the runner puts it in the result)."""
    found = search_pair(cfg, score)
    pair = PairConfig(found.z.tolist(), found.z_prime.tolist())
    return dataclasses.replace(cfg, pair=pair, search=None), found.report
