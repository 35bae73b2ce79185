"""compare_runs: ratios, the distribution test (identical distributions not
flagged, shifted ones flagged; raw samples or histograms), unstable flags."""

from __future__ import annotations

import numpy as np
import pytest
from test_analysis_fixtures import C, S, build_run

from rtbench.analysis.compare import MAX_TEST_SAMPLES, compare_runs, distribution_test
from rtbench.model import Run


def latencies(seed: int, n: int = 5000, shift: float = 1.0) -> list[int]:
    return [int(v * shift) for v in np.random.default_rng(seed).lognormal(8, 0.3, n)]


def run_of(values: list[int], **kwargs: object) -> Run:
    return build_run([C("SEM-SHF", [S("give_to_run", values)])], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("samples", [True, False])
def test_same_distribution_not_flagged_shifted_flagged(samples: bool) -> None:
    base = run_of(latencies(1), samples=samples)
    same = run_of(latencies(2), samples=samples)
    shifted = run_of(latencies(3, shift=1.05), samples=samples)  # 5 % slower
    (row,) = compare_runs([base, same], "p50").rows
    assert row.pvalue is not None and row.pvalue > 0.05 and not row.significant
    (row,) = compare_runs([base, shifted], "p50").rows
    assert row.pvalue is not None and row.pvalue < 0.001 and row.significant
    assert row.ratios[0] == 1.0 and row.ratios[1] == pytest.approx(1.05, rel=0.03)
    kind = "raw samples" if samples else "histogram buckets"
    tied = "" if samples else " (values in a bucket tied)"
    assert row.test == f"Mann-Whitney U on {kind}{tied}"


def test_three_runs_use_kruskal_wallis() -> None:
    runs = [run_of(latencies(s)) for s in (1, 2, 3)]
    (row,) = compare_runs(runs, "mean").rows
    assert row.test.startswith("Kruskal-Wallis H") and not row.significant
    assert len(row.values) == len(row.ratios) == len(row.unstable) == 3


def test_mixed_runs_fall_back_to_histograms_and_missing_series() -> None:
    a = run_of(latencies(1))
    b = run_of(latencies(2), samples=False)
    c = build_run([C("THR-SW", [S("switch", [5, 6, 7], {"n": 2})])])
    rows = {r.case: r for r in compare_runs([a, b, c], "max").rows}
    assert "histogram" in rows["SEM-SHF"].test and rows["SEM-SHF"].values[2] is None
    assert rows["THR-SW"].values == [None, None, 7.0] and rows["THR-SW"].ratios == [None] * 3
    assert rows["THR-SW"].pvalue is None and rows["THR-SW"].test.startswith("none")


def test_unstable_flags_follow_the_indicator() -> None:
    steady = run_of([1000 + i % 50 for i in range(5000)])
    spiky = run_of([1000 + i % 50 for i in range(5000)] + [500_000])
    (row,) = compare_runs([steady, spiky], "max").rows
    assert row.unstable == [False, True] and row.why_unstable[1].startswith("max/p99")
    (row,) = compare_runs([steady, spiky], "p99.99").rows  # 0.5 samples beyond it
    assert row.unstable == [True, True] and "beyond p99.99" in row.why_unstable[0]
    (row,) = compare_runs([steady, spiky], "p50").rows
    assert row.unstable == [False, False]


def test_big_series_are_tested_on_a_seeded_subsample() -> None:
    big = [int(v) for v in np.random.default_rng(7).integers(1000, 2000, MAX_TEST_SAMPLES + 1)]
    a, b = run_of(big), run_of(big)
    first = distribution_test([a.cases[0].series[0], b.cases[0].series[0]])
    again = distribution_test([a.cases[0].series[0], b.cases[0].series[0]])
    assert first == again and "subsample" in first[1] and first[0] is not None


def test_unknown_indicator() -> None:
    with pytest.raises(KeyError):
        compare_runs([run_of([1]), run_of([2])], "p42")
