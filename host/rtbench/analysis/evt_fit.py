"""The numerical pieces of the EVT estimate (`rtbench.analysis.evt`) in
plain numpy: the Gumbel and GEV maximum-likelihood fits, the GEV's
distribution functions and the exact two-sided Kolmogorov-Smirnov p-value.

Why not scipy: importing scipy.stats (or scipy.optimize) costs 1-1.5 s of
CPU, more than `rtbench analyze` may take in all (issue 22: <= 2 s), and
the fits need only a few formulas. Each piece computes what scipy's
counterpart computes (tests/host/test_evt_fit.py compares them): the Gumbel
MLE is the root of the same likelihood equation, the optimiser is the same
Nelder-Mead with the same start, constants and stopping rule, and the KS
p-value is the exact distribution of the statistic (Marsaglia, Tsang and
Wang 2003; for small p-values twice the exact one-sided Smirnov
probability, as Simard and L'Ecuyer 2011 do), never an asymptotic one.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


# --- Gumbel (right-skewed) maximum likelihood --------------------------------


def _gumbel_equation(x: FloatArray, scale: float) -> float:
    """The likelihood equation in the scale alone (loc eliminated): its
    root is the MLE's scale. Decreasing in scale, so the root is unique."""
    logw = -x / scale
    w = np.exp(logw - logw.max())
    return float(x.mean() - np.sum(w * x) / np.sum(w) - scale)


def gumbel_fit(x: FloatArray) -> tuple[float, float]:
    """(loc, scale) of the Gumbel MLE of `x` (scipy's `gumbel_r.fit`)."""
    lo, hi = 0.5, 2.0
    while (_gumbel_equation(x, lo) > 0) == (_gumbel_equation(x, hi) > 0):
        lo, hi = lo / 2, hi * 2
    f_lo = _gumbel_equation(x, lo)
    # Bisection to adjacent doubles: the root as exactly as a double holds it.
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        f_mid = _gumbel_equation(x, mid)
        if f_mid == 0:
            lo = hi = mid
            break
        if (f_mid > 0) == (f_lo > 0):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
    scale = 0.5 * (lo + hi)
    logw = -x / scale
    top = float(logw.max())
    logsumexp = top + math.log(float(np.sum(np.exp(logw - top))))
    return -scale * (logsumexp - math.log(len(x))), scale


# --- Nelder-Mead --------------------------------------------------------------


def nelder_mead(
    f: Callable[[FloatArray], float],
    x0: tuple[float, ...],
    xatol: float = 1e-4,
    fatol: float = 1e-4,
) -> FloatArray:
    """The minimum found by the Nelder-Mead simplex method with scipy's
    `fmin` defaults: the same initial simplex (5 % steps, 0.00025 from
    zero), reflection 1, expansion 2, contraction and shrink 1/2, the
    same order of trials and the same stopping rule (simplex and values
    within the tolerances, or 200 evaluations and iterations a parameter)."""
    start = np.asarray(x0, dtype=np.float64)
    n = len(start)
    sim = np.empty((n + 1, n))
    sim[0] = start
    for k in range(n):
        y = start.copy()
        y[k] = 1.05 * y[k] if y[k] != 0 else 0.00025
        sim[k + 1] = y
    budget = 200 * n
    calls = 0

    def call(x: FloatArray) -> float:
        nonlocal calls
        calls += 1
        return f(x)

    fsim = np.array([call(s) for s in sim])
    order = np.argsort(fsim)
    sim, fsim = sim[order], fsim[order]
    iterations = 1
    while calls < budget and iterations < budget:
        if (
            np.max(np.abs(sim[1:] - sim[0])) <= xatol
            and np.max(np.abs(fsim[0] - fsim[1:])) <= fatol
        ):
            break
        xbar = np.add.reduce(sim[:-1], 0) / n
        worst = sim[-1]
        xr = 2 * xbar - worst
        fxr = call(xr)
        if fxr < fsim[0]:
            xe = 3 * xbar - 2 * worst
            fxe = call(xe)
            sim[-1], fsim[-1] = (xe, fxe) if fxe < fxr else (xr, fxr)
        elif fxr < fsim[-2]:
            sim[-1], fsim[-1] = xr, fxr
        else:
            if fxr < fsim[-1]:
                xc = 1.5 * xbar - 0.5 * worst
                fxc = call(xc)
                shrink = not fxc <= fxr
                if not shrink:
                    sim[-1], fsim[-1] = xc, fxc
            else:
                xcc = 0.5 * xbar + 0.5 * worst
                fxcc = call(xcc)
                shrink = not fxcc < fsim[-1]
                if not shrink:
                    sim[-1], fsim[-1] = xcc, fxcc
            if shrink:
                for j in range(1, n + 1):
                    if calls >= budget:
                        break
                    sim[j] = sim[0] + 0.5 * (sim[j] - sim[0])
                    fsim[j] = call(sim[j])
        iterations += 1
        order = np.argsort(fsim)
        sim, fsim = sim[order], fsim[order]
    best: FloatArray = sim[0]
    return best


# --- the GEV (scipy's genextreme: shape c, the literature's xi = -c) ---------


def gev_cdf(x: FloatArray, c: float) -> FloatArray:
    """P(X <= x) of the standard GEV with shape c."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = -x if c == 0 else np.log1p(-c * x) / c
        cdf: FloatArray = np.exp(-np.exp(t))
    if c > 0:
        cdf[x >= 1 / c] = 1.0  # above the support's upper end
    elif c < 0:
        cdf[x <= 1 / c] = 0.0  # below its lower end
    return cdf


def gev_isf(q: float, c: float) -> float:
    """The x with P(X > x) = q for the standard GEV with shape c."""
    x = -math.log(-math.log1p(-q))
    return x if c == 0 else -math.expm1(-c * x) / c


# --- Kolmogorov-Smirnov ------------------------------------------------------


def ks_statistic(cdf_sorted: FloatArray) -> float:
    """D = sup |F_n - F| from the fitted CDF at the sorted sample."""
    n = len(cdf_sorted)
    i = np.arange(1, n + 1)
    d_plus = float(np.max(i / n - cdf_sorted))
    d_minus = float(np.max(cdf_sorted - (i - 1) / n))
    return max(d_plus, d_minus)


def _log_binomial(n: int, j: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)


def smirnov_sf(n: int, d: float) -> float:
    """P(D+_n >= d), exactly (Birnbaum and Tingey's sum)."""
    if d <= 0:
        return 1.0
    if d >= 1:
        return 0.0
    total = 0.0
    for j in range(math.floor(n * (1 - d)) + 1):
        a, b = 1 - d - j / n, d + j / n
        if a <= 0:
            continue
        total += math.exp(_log_binomial(n, j) + (n - j) * math.log(a) + (j - 1) * math.log(b))
    return min(1.0, d * total)


def _kolmogorov_cdf_exact(n: int, d: float) -> float:
    """P(D_n < d) by Durbin's matrix (Marsaglia, Tsang and Wang 2003)."""
    k = int(n * d) + 1
    m = 2 * k - 1
    h = k - n * d
    i = np.arange(m)
    diff = i[:, None] - i[None, :] + 1
    mat = (diff >= 0).astype(np.float64)
    powers = h ** np.arange(1, m + 1)
    mat[:, 0] -= powers
    mat[m - 1, :] -= powers[::-1]
    if 2 * h - 1 > 0:
        mat[m - 1, 0] += (2 * h - 1) ** m
    fact = np.array([math.gamma(v + 1) if v > 0 else 1.0 for v in range(m + 1)])
    mat /= np.where(diff > 0, fact[np.clip(diff, 0, m)], 1.0)
    # H^n by squaring; each matrix is kept as (m, log of its scale), its
    # entries normalised, since they outgrow a double.
    result, result_log = np.eye(m), 0.0
    base, base_log = mat, 0.0
    e = n
    while e:
        if e & 1:
            result = result @ base
            result_log += base_log
            result, result_log = _normalised(result, result_log)
        e >>= 1
        if e:
            base, base_log = _normalised(base @ base, 2 * base_log)
    value = float(result[k - 1, k - 1])
    if value <= 0:
        return 0.0
    log_p = math.log(value) + result_log + math.lgamma(n + 1) - n * math.log(n)
    return min(1.0, math.exp(log_p))


def _normalised(mat: FloatArray, log_scale: float) -> tuple[FloatArray, float]:
    top = float(np.abs(mat).max())
    if top == 0 or not math.isfinite(top):
        return mat, log_scale
    return mat / top, log_scale + math.log(top)


def ks_pvalue(n: int, d: float) -> float:
    """P(D_n >= d) of the two-sided one-sample KS statistic, exact.

    Where the p-value is small (n d^2 >= 2.2, p under about 2 %), twice the
    one-sided probability is used: exact up to the chance that both
    one-sided statistics exceed d, far below the figure's precision, and
    free of the cancellation in 1 - P(D_n < d)."""
    if d <= 0:
        return 1.0
    if d >= 1:
        return 0.0
    if n * d * d >= 2.2 or d >= 0.5:
        return min(1.0, 2 * smirnov_sf(n, d))
    if n * d <= 1:  # Ruben and Gambino: the exact closed form
        if n * d <= 0.5:
            return 1.0
        return 1 - math.exp(math.lgamma(n + 1) - n * math.log(n) + n * math.log(2 * n * d - 1))
    return max(0.0, 1 - _kolmogorov_cdf_exact(n, d))
