"""compare_runs: ratios, the test that matches the indicator (identical
distributions not flagged, shifted ones flagged; raw samples or
histograms), none for an extreme or a kind without a distribution, pairing
of measured points, runs with nothing in common, unstable flags."""

from __future__ import annotations

import numpy as np
import pytest
from test_analysis_fixtures import C, S, build_run

from rtbench.analysis.compare import (
    MAX_TEST_SAMPLES,
    compare_runs,
    distribution_test,
)
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
    test = "exceedance test at the first run's p50 (Fisher's exact on counts above it)"
    assert row.test == f"{test} on {kind}{tied}"


@pytest.mark.parametrize(
    ("indicator", "test"),
    [("mean", "Welch's t-test"), ("stddev", "Brown-Forsythe test"),
     ("p99", "exceedance test at the first run's p99")],
)  # fmt: skip
def test_each_indicator_gets_its_own_test(indicator: str, test: str) -> None:
    base, same = run_of(latencies(1)), run_of(latencies(2))
    (row,) = compare_runs([base, same], indicator).rows
    assert row.test.startswith(test) and not row.significant, row
    # A tail of 3 % of samples 4x slower moves the p99, the mean and the
    # spread, but hardly the median: the p99's own test sees it.
    tail = latencies(3)
    tail[: len(tail) * 3 // 100] = [v * 4 for v in tail[: len(tail) * 3 // 100]]
    (row,) = compare_runs([base, run_of(tail)], indicator).rows
    assert row.test.startswith(test) and row.significant, row


def test_no_test_of_a_max_and_no_whole_distribution_test_beside_it() -> None:
    a, b = run_of(latencies(1)), run_of(latencies(3, shift=1.5))
    (row,) = compare_runs([a, b], "max").rows
    assert (
        row.pvalue is None and row.test == "none: no test compares a max (one value; see unstable)"
    )
    assert row.ratios[1] is not None  # the ratio is still there
    # Negative control: the whole distributions do differ.
    (p50,) = compare_runs([a, b], "p50").rows
    assert p50.significant


def test_three_runs_use_the_k_sample_form() -> None:
    runs = [run_of(latencies(s)) for s in (1, 2, 3)]
    (row,) = compare_runs(runs, "mean").rows
    assert row.test.startswith("Alexander-Govern test") and not row.significant
    assert len(row.values) == len(row.ratios) == len(row.unstable) == 3
    (row,) = compare_runs(runs, "p90").rows
    assert "chi-square" in row.test and not row.significant


def test_mixed_runs_fall_back_to_histograms_and_missing_series() -> None:
    a = run_of(latencies(1))
    b = run_of(latencies(2), samples=False)
    c = build_run([C("THR-SW", [S("switch", [5, 6, 7], {"n": 2})])])
    rows = {r.case: r for r in compare_runs([a, b, c], "p99").rows}
    assert "histogram" in rows["SEM-SHF"].test and rows["SEM-SHF"].values[2] is None
    assert rows["THR-SW"].values == [None, None, 7.0] and rows["THR-SW"].ratios == [None] * 3
    assert rows["SEM-SHF"].pvalue is not None
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
