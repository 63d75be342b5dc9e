"""Log densities of the output laws, as the kernels evaluate them (scalar numba helpers).

:func:`log_law` is ln p(x) of one output x under a packed :class:`~audit.simulation.packing.Law`
with the full normalising constants: log-sum-exp over the components of a mixture; a sum of
``dim`` one-dimensional log-sum-exps for a product law; for a subset law
ln Π_j φ(x_j) + ln[(1 − p) + p e_k(r)/C(d, k)], r_j = φ(x_j − v_j)/φ(x_j), with the elementary
symmetric polynomial e_k by its recurrence in log space. The plain-numpy references are the
laws' own ``logpdf`` (``audit.mixture``, ``audit.laws``).
"""

from __future__ import annotations

import math

import numpy as np

from audit.simulation.jit import _jit
from audit.simulation.packing import LAW_MIXTURE, LAW_PRODUCT, NOISE_LAPLACE

__all__ = ["log_law", "scratch"]

_LOG_2PI = math.log(2.0 * math.pi)


@_jit(inline="always")
def _kernel_log(t, laplace, scale):
    """ln of the noise density at t, up to its normalising constant."""
    if laplace:
        return -abs(t) / scale
    return -0.5 * t * t / (scale * scale)


@_jit(inline="always")
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    m = a if a > b else b
    return m + math.log1p(math.exp(-abs(a - b)))


@_jit(inline="always")
def _log_mixture(x, law, buf):
    """ln Σ_k w_k φ(x − s_k) with the full normalising constants."""
    shifts = law.shifts
    scale = law.scale
    laplace = law.noise == NOISE_LAPLACE
    K = shifts.shape[0]
    D = x.shape[0]
    top = -np.inf
    for k in range(K):
        acc = 0.0
        if laplace:
            for j in range(D):
                acc += abs(x[j] - shifts[k, j])
            acc = -acc / scale
        else:
            for j in range(D):
                d = x[j] - shifts[k, j]
                acc += d * d
            acc = -0.5 * acc / (scale * scale)
        acc += law.logw[k]
        buf[k] = acc
        if acc > top:
            top = acc
    s = 0.0
    for k in range(K):
        s += math.exp(buf[k] - top)
    return top + math.log(s)


@_jit(inline="always")
def _log_product(x, law):
    """Σ_j ln Σ_k w_jk φ(x_j − s_jk), normalising constants left out.

    Per coordinate, with a_k = ln w_jk + ln φ(x_j − s_jk) and h = max_k a_k, the term is
    h + ln Σ_k e^{a_k − h}; the sums (each in [1, K]) are multiplied together and their
    logarithm taken once per law, so a coordinate costs K − 1 exponentials and no logarithm.
    """
    laplace = law.noise == NOISE_LAPLACE
    K = law.shifts.shape[1]
    total = 0.0
    prod = 1.0
    for j in range(law.dim):
        if K == 2:
            a0 = law.logw2[j, 0] + _kernel_log(x[j] - law.shifts[j, 0], laplace, law.scale)
            a1 = law.logw2[j, 1] + _kernel_log(x[j] - law.shifts[j, 1], laplace, law.scale)
            h = max(a0, a1)
            total += h
            prod *= 1.0 + math.exp(min(a0, a1) - h)
        else:
            h = -np.inf
            for k in range(K):
                h = max(h, law.logw2[j, k]
                        + _kernel_log(x[j] - law.shifts[j, k], laplace, law.scale))
            s = 0.0
            for k in range(K):
                s += math.exp(law.logw2[j, k]
                              + _kernel_log(x[j] - law.shifts[j, k], laplace, law.scale) - h)
            total += h
            prod *= s
        if prod > 1e250:  # at most K^dim: fold into the sum long before it could overflow
            total += math.log(prod)
            prod = 1.0
    return total + math.log(prod)


@_jit(inline="always")
def _log_subset(x, law, buf):
    """ln Π_j φ(x_j) + ln[(1 − p) + p e_k(r)/C(d, k)], r_j = φ(x_j − v_j)/φ(x_j), constants
    left out (``buf``: dim + observed + 1 floats).

    e_k by the recurrence e_m ← e_m + r_j e_{m−1}, in linear space on r_j e^{−c}, c = max_j
    ln r_j (so every term is ≤ 1 and e_m ≤ C(d, m): no overflow), one exponential per
    coordinate; in log space (logaddexp per step) only if that underflows to 0.
    """
    laplace = law.noise == NOISE_LAPLACE
    k = law.observed
    D = law.dim
    lr = buf[:D]
    E = buf[D:D + k + 1]
    base = 0.0
    c = -np.inf
    for j in range(D):
        b = _kernel_log(x[j], laplace, law.scale)
        lr[j] = _kernel_log(x[j] - law.shifts[0, j], laplace, law.scale) - b
        base += b
        c = max(c, lr[j])
    E[0] = 1.0
    for m in range(1, k + 1):
        E[m] = 0.0
    for j in range(D):
        r = math.exp(lr[j] - c)
        for m in range(min(j + 1, k), 0, -1):
            E[m] += r * E[m - 1]
    if E[k] > 0.0:
        log_ek = math.log(E[k]) + k * c
    else:
        E[0] = 0.0
        for m in range(1, k + 1):
            E[m] = -np.inf
        for j in range(D):
            for m in range(min(j + 1, k), 0, -1):
                E[m] = _logaddexp(E[m], E[m - 1] + lr[j])
        log_ek = E[k]
    return base + _logaddexp(law.log_off, law.log_on + log_ek)


@_jit(inline="always")
def log_law(x, law, buf):
    """ln of the law's density at x (full normalising constants)."""
    D = x.shape[0]
    if law.noise == NOISE_LAPLACE:
        const = -D * math.log(2.0 * law.scale)
    else:
        const = -D * (math.log(law.scale) + 0.5 * _LOG_2PI)
    if law.kind == LAW_MIXTURE:
        return _log_mixture(x, law, buf) + const
    if law.kind == LAW_PRODUCT:
        return _log_product(x, law) + const
    return _log_subset(x, law, buf) + const


@_jit(inline="always")
def scratch(lp, lq):
    """Floats of buffer :func:`log_law` needs for either of two laws."""
    a = lp.shifts.shape[0] if lp.kind == LAW_MIXTURE else lp.dim + lp.observed + 1
    b = lq.shifts.shape[0] if lq.kind == LAW_MIXTURE else lq.dim + lq.observed + 1
    return max(a, b, 1)
