"""The settings of the ``releases`` experiment and what its two modules share (the scenarios,
the one-release plan, a row, the accountant's bracket, the figure's styles):
:mod:`experiments.releases` and :mod:`experiments.releases_persistent` both read them, so
that neither imports the other.
"""

from __future__ import annotations

from experiments.common import config

__all__ = ["NAME", "EPSILON", "DELTA", "BOUND", "N_RECORDS", "FRESH_RULES", "STYLE",
           "gauss_scenario", "laplace_scenario", "doc", "plan", "row", "accountant"]

NAME = "releases"
EPSILON = 1.0
DELTA = 1e-5
BOUND = 1.0
N_RECORDS = 5

#: the per-release accounting each setting would compose (the name stored in the rows)
FRESH_RULES = {"gaussian": "C_p*(G_mu) composed k times by PLD (Proposition 9.2)",
               "laplace": "k x ln(1 + p*(e^eps - 1)): Theorem 3.2 per release, composed"}



def gauss_scenario() -> dict:
    return {"mechanism": "gaussian", "epsilon": EPSILON, "delta": DELTA,
            "calibration": "classical", "query": "sum", "d": 1, "n": N_RECORDS,
            "bound": BOUND}


def laplace_scenario(d: int) -> dict:
    return {"mechanism": "laplace", "epsilon": EPSILON, "query": "sum", "d": d,
            "n": N_RECORDS, "bound": BOUND}


def doc(scenario: dict, missingness: dict, k: int, masks: str, trials: int, seed: int,
         jobs: int, pair=None, **audit) -> dict:
    doc = {"scenario": scenario, "missingness": missingness,
           "releases": {"count": k, "masks": masks},
           "audit": {"trials": trials, "seed": seed, "jobs": jobs, **audit}}
    if pair is not None:
        doc["pair"] = {"z": pair[0], "z_prime": pair[1]}
    return doc


def plan(scenario: dict, missingness: dict):
    """The one-release plan (pair, laws, noise scale) of a setting."""
    from audit.pipeline.plan import plan_audit

    doc = {"scenario": scenario, "missingness": missingness,
           "audit": {"trials": 1000, "seed": 0, "delta": DELTA}}
    return plan_audit(config(doc, f"{NAME}[plan]"))


def row(res, setting: str, subject: str, k: int, masks: str, *, eps_pair, eps_pair_error,
         fresh: float, rule: str, **extra) -> dict:
    return {**res.to_dict(), "setting": setting, "subject": subject, "releases": k,
            "masks": masks, "eps_pair": eps_pair, "eps_pair_error": eps_pair_error,
            "eps_exact": eps_pair, "eps_fresh_composed": fresh,
            "eps_fresh_composed_rule": rule,
            "crosses_fresh_composed": bool(res.eps_lower > fresh), **extra}


def accountant(noise: str, scale: float, p_star: float, k: int, masks: str,
               delta: float, persistence: float | None = None) -> dict:
    """The accountant's worst case of a setting of this experiment (a sum over one column in
    [−B, B], NA read as 0, record-level masks: :func:`audit.theory.worst_case.worst_case`):
    ``eps_accountant`` its certified upper end, ``eps_accountant_lower`` its lower end."""
    from audit.theory.worst_case import Setting, worst_case

    w = worst_case(Setting(noise, scale, (-BOUND, BOUND), 0.0, p_star, k, masks,
                           persistence), delta)
    return {"eps_accountant": w.epsilon, "eps_accountant_lower": w.lower,
            "eps_accountant_exact": w.exact}


STYLE = {
    "eps_theory": {"color": "k", "ls": "-", "lw": 1.8, "label": "shared-mask bound "
                   "(Theorem 3.2 / §7 once on the composition)"},
    "eps_fresh_composed": {"color": "tab:red", "ls": "--", "lw": 1.8, "label":
                           "fresh-mask composed bound (per-release accounting)"},
    "eps_base": {"color": "0.6", "ls": ":", "lw": 1.6, "label": "no missingness, composed"},
    "pair_shared": {"color": "tab:blue", "ls": "-", "lw": 1.0, "marker": "s", "ms": 6,
                    "mfc": "none", "label": "ε_pair, shared masks"},
    "pair_fresh": {"color": "tab:orange", "ls": "-", "lw": 1.0, "marker": "s", "ms": 6,
                   "mfc": "none", "label": "ε_pair, fresh masks"},
    "lower_shared": {"color": "tab:blue", "ls": "none", "marker": "o", "ms": 6, "mec": "k",
                     "mew": 0.6, "zorder": 5, "label": "ε_lower (95 %), shared masks"},
    "lower_fresh": {"color": "tab:orange", "ls": "none", "marker": "D", "ms": 5, "mec": "k",
                    "mew": 0.6, "zorder": 5, "label": "ε_lower (95 %), fresh masks"},
    # a wide tick at the upper end (a bar down to the lower end, :func:`_accountant`): thin
    # enough to leave the ε_pair squares it often equals (Gaussian shared masks) visible
    "accountant_shared": {"color": "tab:green", "ls": "none", "lw": 0.5, "marker": "_",
                          "ms": 16, "mew": 2.5, "zorder": 4,
                          "label": "exact accountant (bound --config), shared masks: "
                                   "upper end, bar to its lower end"},
    "accountant_fresh": {"color": "#7fcf7f", "ls": "none", "lw": 0.5, "marker": "_",
                         "ms": 16, "mew": 2.5, "zorder": 4,
                         "label": "exact accountant, fresh masks"},
}
