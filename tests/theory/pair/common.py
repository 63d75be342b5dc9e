"""Closed forms, brute-force integration and mixtures shared by the pair tests."""

from __future__ import annotations

import numpy as np
from scipy import integrate, optimize
from scipy.stats import norm

from audit.mixture import Mixture


def gauss_delta(eps, mu):  # Balle–Wang (2018) Thm 8
    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def laplace_delta(eps, mu):
    return max(0.0, 1.0 - np.exp((eps - mu) / 2))


def single(kind, shift, scale=1.0):
    return Mixture([1.0], [shift], kind, scale)


def brute(P, Q, eps):
    """∫ max(0, p − e^ε q) by quad, split at the shifts and at sign changes of log p/q found on
    a dense grid (independent of the integrator under test)."""

    def L(x):
        return P.logpdf(np.atleast_1d(x)) - Q.logpdf(np.atleast_1d(x)) - eps

    pts = np.sort(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
    lo, hi = pts[0] - 40 * P.scale, pts[-1] + 40 * P.scale
    xs = np.linspace(lo, hi, 100_001)
    lv = L(xs)
    idx = np.flatnonzero(np.sign(lv[1:]) != np.sign(lv[:-1]))
    roots = [optimize.brentq(lambda x: L(x)[0], xs[i], xs[i + 1], xtol=1e-15) for i in idx]
    brk = np.unique(np.concatenate([[lo, hi], pts, roots]))

    def f(x):
        return max(0.0, P.pdf(np.array([x]))[0] - np.exp(eps) * Q.pdf(np.array([x]))[0])

    total, qerr = 0.0, 0.0
    for a, b in zip(brk[:-1], brk[1:], strict=True):
        v, e = integrate.quad(f, a, b, epsabs=1e-15, epsrel=1e-13, limit=500)
        total, qerr = total + v, qerr + e
    return total, qerr


def random_pairs(kind, n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k1, k2 = rng.integers(1, 5, 2)
        out.append(
            (
                Mixture(rng.dirichlet(np.ones(k1)), rng.normal(0, 1.5, k1), kind, 1.0),
                Mixture(rng.dirichlet(np.ones(k2)), rng.normal(0, 1.5, k2), kind, 1.0),
            )
        )
    return out
