"""Worst-case estimate beyond the samples (probabilistic WCET, block maxima).

The samples are cut into blocks of `block_size`; the maximum of each block
is fitted with a generalised extreme-value distribution (GEV, scipy's
genextreme), and the latency exceeded with probability p by one sample is
read from it: P(sample > x) = p means P(block max <= x) = (1 - p)^B.

The result is an estimate under assumptions the data may not meet (samples
independent and alike, the tail in the GEV family), never a guarantee; every
verdict says so. It is withheld (valid=False) when there are too few blocks,
when the block maxima do not vary, or when the fit is poor: a
Kolmogorov-Smirnov test of the maxima against the fitted GEV with a p-value
under GOF_ALPHA. The KS p-value is optimistic (the parameters come from the
same maxima), so a rejection is a clear one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from rtbench.analysis import chunkwise
from rtbench.analysis.evt_fit import (
    gev_cdf,
    gev_isf,
    gumbel_fit,
    ks_pvalue,
    ks_statistic,
    nelder_mead,
)
from rtbench.model import ArraySamples, ChunkedSamples

DEFAULT_PROBABILITIES = (1e-6, 1e-9)
MIN_BLOCK = 100  # samples per block at least: a block max must be a tail value
TARGET_BLOCKS = 500  # enough maxima for a fit, few enough for a big block
MIN_BLOCKS = 30  # fewer maxima than this: no fit
GOF_ALPHA = 0.05
HEAVY_TAIL_XI = 0.5  # shape above this: infinite variance, estimates very uncertain
MAX_XI = 1.0  # shape at or above this: infinite mean, no estimate at all


@dataclass
class EvtResult:
    valid: bool
    verdict: str
    estimates: dict[float, float]  # exceedance probability per sample -> ns
    block_size: int
    n_blocks: int
    gof_pvalue: float | None
    params: dict[str, float] = field(default_factory=dict)


def default_block_size(n: int) -> int:
    return max(MIN_BLOCK, n // TARGET_BLOCKS)


def block_maxima(samples: npt.NDArray[np.int64], block_size: int) -> npt.NDArray[np.float64]:
    """Maximum of each whole block (a view is reduced: no copy of the samples)."""
    nb = len(samples) // block_size
    blocks = samples[: nb * block_size].reshape(nb, block_size)
    maxima: npt.NDArray[np.float64] = blocks.max(axis=1).astype(np.float64)
    return maxima


_LOGXMAX = math.log(np.finfo(np.float64).max)
_XMIN = np.finfo(np.float64).tiny


def _gev_nnlf(theta: npt.NDArray[np.float64], x: npt.NDArray[np.float64]) -> float:
    """The objective scipy's `genextreme.fit` minimises (its penalised
    negative log-likelihood: a point outside the support, or of a non-finite
    log-density, costs 100 log(max double)), the same operations in plain
    numpy: scipy's generic version costs a millisecond a call in array-API
    dispatch, and a fit makes hundreds of calls."""
    c, loc, scale = (float(t) for t in theta)
    if not math.isfinite(c) or scale <= 0:
        return math.inf
    x = (x - loc) / scale
    n_log_scale = len(x) * math.log(scale)
    lo = 1.0 / min(c, -_XMIN) if c < 0 else -math.inf
    hi = 1.0 / max(c, _XMIN) if c > 0 else math.inf
    inside = (lo <= x) & (x <= hi)
    n_bad = len(x) - int(np.count_nonzero(inside))
    x = x[inside]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cx = c * x if c != 0 else np.zeros_like(x)
        logex2 = np.log1p(-cx)
        logpex2 = np.log1p(-c * x) / c if c != 0 else -x
        logpdf = -np.exp(logpex2) + logpex2 - logex2
        logpdf[(cx == 1) | (cx == -np.inf)] = -np.inf
        if c == 1:
            logpdf[x == 1] = 0.0
    finite = np.isfinite(logpdf)
    n_bad += len(logpdf) - int(np.count_nonzero(finite))
    return -float(np.sum(logpdf[finite])) + n_bad * _LOGXMAX * 100 + n_log_scale


def _fit(z: npt.NDArray[np.float64]) -> tuple[float, float, float]:
    """GEV parameters (scipy's c, loc, scale) of standardised maxima: what
    `genextreme.fit(z, 0.0, loc=g_loc, scale=g_scale)` returns (the same
    Nelder-Mead from the same start on the same objective, all in numpy,
    rtbench.analysis.evt_fit: importing scipy's optimiser would cost more
    than the whole `analyze`; tests/host/test_analysis_evt.py compares).

    scipy's optimiser often lands far off when started from its defaults;
    starting at the Gumbel fit (c = 0) of the same data lands reliably."""
    x = np.ravel(z)
    g_loc, g_scale = gumbel_fit(x)
    c, loc, scale = nelder_mead(lambda theta: _gev_nnlf(theta, x), (0.0, g_loc, g_scale))
    if not (math.isfinite(c) and scale > 0):
        raise ValueError("the GEV fit left the parameters' range")
    return float(c), float(loc), float(scale)


def _ks_pvalue(z: npt.NDArray[np.float64], c: float, loc: float, scale: float) -> float:
    """The KS test of the maxima against the fitted GEV (scipy's
    `kstest(z, "genextreme", args=(c, loc, scale))`, exact p-value)."""
    cdf = gev_cdf((np.sort(z) - loc) / scale, c)
    return ks_pvalue(len(z), ks_statistic(cdf))


def _fit_problem(gof: float, xi: float, nb: int) -> str:
    """Why the fit cannot give an estimate ('' when it can)."""
    if not gof >= GOF_ALPHA:
        return f"the GEV fit of {nb} block maxima is poor (KS p={gof:.3g} < {GOF_ALPHA})"
    if xi >= MAX_XI:
        return f"the tail is too heavy (shape {xi:.2f} >= {MAX_XI:g}: infinite mean)"
    return ""


def _invalid(verdict: str, block: int, nb: int, p: float | None = None) -> EvtResult:
    return EvtResult(False, f"no estimate: {verdict}", {}, block, nb, p)


def worst_case(
    samples: npt.ArrayLike | ChunkedSamples,
    probabilities: Sequence[float] = DEFAULT_PROBABILITIES,
    block_size: int | None = None,
) -> EvtResult:
    """Latency estimates at the given per-sample exceedance probabilities
    (a long stored series' block maxima are taken a chunk at a time)."""
    values = samples if isinstance(samples, ChunkedSamples) else np.asarray(samples)
    block = block_size or default_block_size(len(values))
    nb = len(values) // block if block > 0 else 0
    if block < 1 or nb < MIN_BLOCKS:
        return _invalid(
            f"{nb} block(s) of {block} samples, at least {MIN_BLOCKS} are needed", block, nb
        )
    if isinstance(values, ArraySamples):
        values = values.values
    if isinstance(values, ChunkedSamples):
        maxima = chunkwise.block_maxima(values, block)
    else:
        maxima = block_maxima(values, block)
    mean, sd = float(maxima.mean()), float(maxima.std())
    if sd == 0:
        return _invalid("every block maximum is the same value", block, nb)
    z = (maxima - mean) / sd
    c, loc, scale = _fit(z)
    gof = _ks_pvalue(z, c, loc, scale)
    xi = -c  # scipy's sign convention is the opposite of the literature's
    params = {"shape_xi": xi, "loc_ns": loc * sd + mean, "scale_ns": scale * sd}
    problem = _fit_problem(gof, xi, nb)
    if problem:
        r = _invalid(problem, block, nb, gof)
        r.params = params
        return r
    estimates = {}
    for p in probabilities:
        # P(block max > x) = 1 - (1 - p)^B, computed without cancellation.
        tail = -math.expm1(block * math.log1p(-p))
        estimates[float(p)] = (loc + scale * gev_isf(tail, c)) * sd + mean
    heavy = (
        f"; heavy tail (shape {xi:.2f} > {HEAVY_TAIL_XI}): very uncertain"
        if xi > HEAVY_TAIL_XI
        else ""
    )
    verdict = (
        f"estimate from a GEV fit of {nb} block maxima of {block} samples "
        f"(KS p={gof:.3g}, shape {xi:.3f}){heavy}; an estimate, not a guarantee"
    )
    return EvtResult(True, verdict, estimates, block, nb, gof, params)
