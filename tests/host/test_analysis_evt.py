"""Known-answer tests of the extreme-value worst-case estimate: a known tail
is recovered, Gumbel parameters are recovered, and poor or impossible fits
give no estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from rtbench.analysis.evt import MIN_BLOCKS, block_maxima, default_block_size, worst_case


def test_exponential_tail_is_recovered() -> None:
    # P(X > x) = exp(-(x - 1000) / 100): the latency at p is 1000 + 100 ln(1/p)
    x = (np.random.default_rng(3).exponential(100, 200_000) + 1000).astype(np.int64)
    r = worst_case(x, (1e-6, 1e-9))
    assert r.valid, r.verdict
    assert r.gof_pvalue is not None and r.gof_pvalue >= 0.05
    assert abs(r.params["shape_xi"]) < 0.1  # exponential tails give Gumbel maxima
    for p in (1e-6, 1e-9):
        truth = 1000 + 100 * math.log(1 / p)
        assert r.estimates[p] == pytest.approx(truth, rel=0.05), p
    assert r.estimates[1e-9] > r.estimates[1e-6] > x.max() * 0.9
    assert "estimate" in r.verdict and "not a guarantee" in r.verdict


def test_gumbel_parameters_are_recovered() -> None:
    g = sps.gumbel_r.rvs(loc=5000, scale=300, size=3000, random_state=np.random.default_rng(4))
    r = worst_case(np.round(g).astype(np.int64), block_size=1)
    assert r.valid, r.verdict
    assert r.params["loc_ns"] == pytest.approx(5000, rel=0.01)
    assert r.params["scale_ns"] == pytest.approx(300, rel=0.08)
    assert abs(r.params["shape_xi"]) < 0.06


def test_a_poor_fit_gives_no_estimate() -> None:
    rng = np.random.default_rng(5)
    y = rng.normal(1000, 10, 100_000).astype(np.int64)
    for b in range(len(y) // 200):  # half the blocks hold one huge spike: bimodal maxima
        if rng.random() < 0.5:
            y[b * 200 + rng.integers(200)] = 100_000 + rng.integers(100)
    r = worst_case(y, block_size=200)
    assert not r.valid and r.estimates == {}
    assert r.verdict.startswith("no estimate: the GEV fit") and "poor" in r.verdict
    assert r.gof_pvalue is not None and r.gof_pvalue < 0.05


def test_too_few_blocks_constant_maxima_and_infinite_mean_give_no_estimate() -> None:
    r = worst_case(np.arange(1000, dtype=np.int64))
    assert not r.valid and f"at least {MIN_BLOCKS}" in r.verdict and r.n_blocks == 10
    r = worst_case(np.full(10_000, 7, dtype=np.int64))
    assert not r.valid and "same value" in r.verdict
    # Pareto with alpha 0.8: maxima are Frechet with shape 1/0.8 = 1.25 >= 1
    pareto = (np.random.default_rng(6).pareto(0.8, 100_000) * 1000 + 1000).astype(np.int64)
    r = worst_case(pareto)
    assert not r.valid and "too heavy" in r.verdict, r.verdict


def test_block_maxima_and_default_block_size() -> None:
    v = np.arange(10, dtype=np.int64)
    assert block_maxima(v, 3).tolist() == [2, 5, 8]  # the partial last block is dropped
    assert default_block_size(1000) == 100
    assert default_block_size(100_000_000) == 200_000


@pytest.mark.parametrize("draw", ["gumbel", "pareto", "weibull", "uniform"])
def test_fit_is_scipys_genextreme_fit(draw: str) -> None:
    """evt._fit runs a numpy copy of scipy's optimiser on a numpy copy of
    scipy's objective (no scipy import): the parameters are scipy's own, for
    heavy (pareto), light (gumbel) and bounded (weibull, uniform) tails."""
    from rtbench.analysis.evt import _fit
    from rtbench.analysis.stats import scipy_stats

    rng = np.random.default_rng(11)
    x = {
        "gumbel": lambda: rng.gumbel(0.0, 1.0, 500),
        "pareto": lambda: rng.pareto(2.0, 500),
        "weibull": lambda: -rng.weibull(3.0, 500),
        "uniform": lambda: rng.uniform(0.0, 1.0, 500),
    }[draw]()
    z = (x - x.mean()) / x.std()
    sps = scipy_stats()
    g_loc, g_scale = sps.gumbel_r.fit(z)
    want = sps.genextreme.fit(z, 0.0, loc=g_loc, scale=g_scale)
    assert _fit(z) == pytest.approx(tuple(float(v) for v in want), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("draw", ["gumbel", "pareto", "uniform"])
def test_gumbel_fit_ks_and_quantiles_are_scipys(draw: str) -> None:
    """The numpy Gumbel MLE, GEV distribution functions and KS p-value
    (rtbench.analysis.evt_fit) give scipy's figures."""
    from rtbench.analysis.evt import _fit, _ks_pvalue
    from rtbench.analysis.evt_fit import gev_isf, gumbel_fit

    rng = np.random.default_rng(5)
    x = {
        "gumbel": lambda: rng.gumbel(0.0, 1.0, 120),
        "pareto": lambda: rng.pareto(2.0, 120),
        "uniform": lambda: rng.uniform(0.0, 1.0, 120),
    }[draw]()
    z = (x - x.mean()) / x.std()
    assert gumbel_fit(z) == pytest.approx(sps.gumbel_r.fit(z), rel=1e-12)
    c, loc, scale = _fit(z)
    want = sps.kstest(z, "genextreme", args=(c, loc, scale)).pvalue
    assert _ks_pvalue(z, c, loc, scale) == pytest.approx(want, rel=1e-8)
    for q in (1e-3, 1e-9, 0.5):
        assert gev_isf(q, c) == pytest.approx(sps.genextreme.isf(q, c), rel=1e-12)
    assert gev_isf(1e-6, 0.0) == pytest.approx(sps.genextreme.isf(1e-6, 0.0), rel=1e-12)


def test_ks_pvalue_is_the_exact_distribution() -> None:
    """Where scipy computes the exact KS distribution (n <= 140) the two
    agree to 1e-7 across the range, tiny p-values included; above, scipy
    switches to an asymptotic series and the exact figure stays within
    1e-4 of it."""
    from rtbench.analysis.evt_fit import ks_pvalue

    for n in (5, 30, 100, 140, 141, 500):
        for d in np.linspace(0.01, 0.9, 40):
            want = float(sps.kstwo.sf(d, n))
            rel = 1e-7 if n <= 140 else 1e-4
            assert ks_pvalue(n, float(d)) == pytest.approx(want, rel=rel, abs=1e-300), (n, d)
    assert ks_pvalue(50, 0.0) == 1.0 and ks_pvalue(50, 1.0) == 0.0


def test_analysis_does_not_import_scipy() -> None:
    """`rtbench analyze` stays cheap: the EVT path needs no scipy (its
    import alone costs more than the command's budget, issue 22)."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from rtbench.analysis.evt import worst_case\n"
        "r = worst_case(np.random.default_rng(1).gumbel(1e4, 50, 100_000).astype(np.int64))\n"
        "assert r.valid, r.verdict\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
