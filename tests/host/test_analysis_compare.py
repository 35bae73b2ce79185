"""compare_runs: the run is the unit of evidence. A test over runs (each
run's indicator one observation), nothing significant with one run per
side, the change against the spread between repetitions, the
Benjamini-Hochberg adjustment, grouping by labels, pairing of measured
points, runs with nothing in common, unstable flags."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from test_analysis_fixtures import C, S, build_run

from rtbench.analysis.compare import (
    CONSTANT_TEST,
    ONE_RUN,
    CompareRow,
    compare_runs,
    configurations,
    constant_columns_p,
)
from rtbench.model import Run


def latencies(seed: int, n: int = 2000, shift: float = 1.0) -> list[int]:
    return [int(v * shift) for v in np.random.default_rng(seed).lognormal(8, 0.3, n)]


def run_of(values: list[int], **kwargs: object) -> Run:
    return build_run([C("SEM-SHF", [S("give_to_run", values)])], **kwargs)


def group(seeds: range, shift: float = 1.0, **kwargs: object) -> list[Run]:
    return [run_of(latencies(s, shift=shift), **kwargs) for s in seeds]


def compare_groups(a: list[Run], b: list[Run], indicator: str) -> list[CompareRow]:
    return compare_runs([a[0], b[0]], indicator, members=[a, b]).rows


def test_one_run_per_side_is_never_significant_and_says_why() -> None:
    a, b = run_of(latencies(1)), run_of(latencies(3, shift=1.5))
    for indicator in ("p50", "p99", "mean", "max"):
        cmp = compare_runs([a, b], indicator)
        (row,) = cmp.rows
        assert row.pvalue is None and not row.significant and row.test == "none: one run per side"
        assert row.ratios[1] == pytest.approx(1.5, rel=0.1)  # the ratio is still there
        assert row.beyond_noise is None and not row.differs
        assert cmp.note == ONE_RUN and "--repeat" in cmp.note and cmp.tested == 0


@pytest.mark.parametrize("samples", [True, False])
@pytest.mark.parametrize("indicator", ["p50", "p99", "mean", "stddev", "max"])
def test_repetitions_of_one_configuration_do_not_differ_a_shift_does(
    samples: bool, indicator: str
) -> None:
    a = group(range(1, 4), samples=samples)
    same = group(range(4, 7), samples=samples)
    shifted = group(range(7, 10), shift=1.5, samples=samples)
    (row,) = compare_groups(a, same, indicator)
    assert row.pvalue is not None and not row.significant and not row.differs, row
    assert row.test == f"Welch's t-test on the per-run {indicator} (log scale, 3 vs 3 runs)"
    assert [len(v) for v in row.per_run] == [3, 3] and row.spread is not None
    (row,) = compare_groups(a, shifted, indicator)
    assert row.significant and row.beyond_noise and row.differs, row


def test_a_change_within_the_spread_is_not_beyond_noise() -> None:
    # One wild repetition on side B: the medians differ a little, the spread
    # between repetitions a lot.
    a = group(range(1, 4))
    b = [*group(range(4, 6), shift=1.02), run_of(latencies(6, shift=3.0))]
    (row,) = compare_groups(a, b, "p50")
    assert row.change is not None and row.spread is not None and row.change < row.spread
    assert row.beyond_noise is False and not row.differs


@pytest.mark.parametrize(("runs", "significant"), [(2, False), (3, True), (4, True)])
def test_repetitions_that_repeat_exactly_are_weighed_by_their_pattern(
    runs: int, significant: bool
) -> None:
    """A figure read to a clock's step repeats exactly (under stress-ng the
    slow give's p50 was 100 ns in each of three runs, 20,157 ns in each of
    three others): Welch's test has no variance then, and the change was
    once left untested. The pattern's own chance stands in: 1/32 for 3 vs
    3 runs, 1/8 for 2 vs 2 (not significant), and none at all where both
    sides repeat one same value."""
    a = [run_of([100] * 50) for _ in range(runs)]
    b = [run_of([20_157] * 50) for _ in range(runs)]
    (row,) = compare_groups(a, b, "p50")
    assert row.test == f"{CONSTANT_TEST} ({runs} vs {runs} runs)"
    assert row.pvalue == pytest.approx(2 * 0.5 ** (2 * runs), rel=1e-6)
    assert row.significant is significant and row.spread == 0 and row.beyond_noise
    (row,) = compare_groups(a, [run_of([100] * 50) for _ in range(runs)], "p50")
    assert (
        row.pvalue is None and row.test == "none: every repetition of each side gave the same value"
    )
    assert not row.significant and row.beyond_noise is False


def test_a_scaled_figure_is_tested_on_its_logarithm() -> None:
    """Under stress-ng the slow give's per-run p50 was 21,992, 21,331,
    73,648 and 24,456 ns beside 100, 130, 120 and 80: on the raw scale the
    one wild run left Welch's test at p = 0.07, on logarithms it is far
    beyond. Where a run's figure is 0 the raw scale stays."""
    a = [run_of([v] * 50) for v in (100, 130, 120, 80)]
    b = [run_of([v] * 50) for v in (21_992, 21_331, 73_648, 24_456)]
    (row,) = compare_groups(a, b, "p50")
    assert row.test == "Welch's t-test on the per-run p50 (log scale, 4 vs 4 runs)"
    assert row.pvalue is not None and row.pvalue < 1e-4 and row.significant
    raw = scipy.stats.ttest_ind([100, 130, 120, 80], [21_992, 21_331, 73_648, 24_456],
                                equal_var=False).pvalue  # fmt: skip
    assert raw > 0.05  # the negative control: what the raw scale said
    # Beyond the spread on the same scale: a 200x change against at most
    # 3.5x between runs of a side; in nanoseconds the wild run's range
    # (52,317) was larger than the change (23,114), the shown figures.
    assert row.beyond_noise and row.differs, row
    assert row.spread is not None and row.change is not None
    assert row.change < row.spread  # the raw scale's negative control
    zeros = [run_of([v] * 50) for v in (0, 10, 20, 0)]
    (row,) = compare_groups(zeros, b, "p50")
    assert row.test == "Welch's t-test on the per-run p50 (4 vs 4 runs)"


@pytest.mark.parametrize("sizes", [[2, 2], [2, 3], [3, 3], [4, 4], [3, 3, 3]])
def test_the_pattern_chance_bounds_any_distribution_of_per_run_figures(sizes: list[int]) -> None:
    """The bound is the largest chance over two-valued per-run figures; no
    distribution over more values (random ones, 2 to 5 values) exceeds it,
    and two equally likely values reach it."""
    bound = constant_columns_p(sizes)
    rng = np.random.default_rng(7)
    for _ in range(300):
        q = rng.dirichlet(np.ones(int(rng.integers(2, 6))))
        alike = np.prod([(q**n).sum() for n in sizes])
        chance = alike - (q ** sum(sizes)).sum()  # every column one value, not all the same
        assert chance <= bound + 1e-12, (q, chance, bound)
    assert bound == pytest.approx(
        np.prod([2 * 0.5**n for n in sizes]) - 2 * 0.5 ** sum(sizes), rel=1e-9
    )


def test_three_columns_use_the_k_sample_form() -> None:
    cols = [group(range(s, s + 3)) for s in (1, 4, 7)]
    cmp = compare_runs([c[0] for c in cols], "mean", members=cols)
    (row,) = cmp.rows
    assert row.test.startswith("Alexander-Govern test") and not row.significant
    assert len(row.values) == len(row.ratios) == len(row.unstable) == 3


def test_p_values_are_adjusted_for_the_series_tested() -> None:
    def run(seed: int, shift: float) -> Run:
        rng = np.random.default_rng(seed)
        values = [[int(v * shift) for v in rng.lognormal(8, 0.3, 500)] for _ in range(20)]
        series = [S(f"s{i}", v) for i, v in enumerate(values)]
        return build_run([C("SEM-SHF", series)])

    a = [run(s, 1.0) for s in range(3)]
    b = [run(s, 1.0) for s in range(10, 13)]
    cmp = compare_runs([a[0], b[0]], "p50", members=[a, b])
    assert cmp.tested == 20 and not cmp.differing
    # Adjusted p-values are never below the raw ones: the smallest raw p of
    # twenty null series is near 0.05 / 20 at best; adjusted, near 1.
    assert min(r.pvalue for r in cmp.rows if r.pvalue is not None) > 0.05


def test_missing_series_and_kinds_without_a_distribution() -> None:
    a = group(range(1, 3))
    b = group(range(3, 5))
    c = [build_run([C("THR-SW", [S("switch", [5, 6, 7], {"n": 2})])]) for _ in range(2)]
    cmp = compare_runs([a[0], b[0], c[0]], "p99", members=[a, b, c])
    rows = {r.case: r for r in cmp.rows}
    assert rows["SEM-SHF"].values[2] is None and rows["SEM-SHF"].pvalue is not None
    assert rows["THR-SW"].values == [None, None, 7.0] and rows["THR-SW"].ratios == [None] * 3
    assert rows["THR-SW"].pvalue is None and rows["THR-SW"].test.startswith("none")
    counts = [build_run([C("SEM-SHF", [S("lost", [3], kind="count")])]) for _ in range(4)]
    (row,) = compare_runs(counts[:2], "max", members=[counts[:2], counts[2:]]).rows
    assert row.pvalue is None and row.test == "none: a count has no distribution to test"


def test_runs_group_by_their_labels_but_for_a_repetition() -> None:
    def labelled(**labels: str) -> Run:
        r = run_of([1, 2, 3])
        r.labels = labels
        return r

    rt = [labelled(kernel="rt", repeat=str(k), repeat_id="x") for k in (1, 2)]
    gen = [labelled(kernel="generic", repetition=str(k)) for k in (1, 2, 3)]
    assert configurations([rt[0], gen[0], rt[1], gen[1], gen[2]]) == [rt, gen]
    # Unlabelled runs are each their own configuration: nothing to group by.
    plain = [run_of([1]), run_of([2])]
    assert configurations(plain) == [[plain[0]], [plain[1]]]


def test_unstable_flags_follow_the_indicator() -> None:
    steady = run_of([1000 + i % 50 for i in range(5000)])
    spiky = run_of([1000 + i % 50 for i in range(5000)] + [500_000])
    (row,) = compare_runs([steady, spiky], "max").rows
    assert row.unstable == [False, True] and row.why_unstable[1].startswith("max/p99")
    (row,) = compare_runs([steady, spiky], "p99.99").rows  # 0.5 samples beyond it
    assert row.unstable == [True, True] and "beyond p99.99" in row.why_unstable[0]
    (row,) = compare_runs([steady, spiky], "p50").rows
    assert row.unstable == [False, False]


def test_unknown_indicator() -> None:
    with pytest.raises(KeyError):
        compare_runs([run_of([1]), run_of([2])], "p42")
