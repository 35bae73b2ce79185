"""No false difference: five recorded runs of one configuration
(tests/host/data/repetitions), split into two groups in every way, compared
over runs. The negative control, a known difference that must be found, is
tests/agent/test_compare_fault.py (the test build's slow give)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rtbench.analysis.compare import ALPHA, ONE_RUN, compare_runs
from rtbench.model import Run
from rtbench.stream import load_run

DATA = Path(__file__).parent / "data" / "repetitions"
INDICATORS = ("p50", "p99", "max", "mean")


@pytest.fixture(scope="module")
def runs() -> list[Run]:
    found = [load_run(p) for p in sorted(DATA.glob("rep-*.rtb"))]
    assert len(found) == 5
    return found


def test_two_groups_of_one_configuration_differ_in_nothing(runs: list[Run]) -> None:
    a, b = runs[:2], runs[2:]
    for indicator in INDICATORS:
        cmp = compare_runs([a[0], b[0]], indicator, members=[a, b])
        assert cmp.tested >= 10 and not cmp.note
        assert [r.label for r in cmp.rows if r.significant] == [], indicator
        assert cmp.differing == []


def test_every_split_stays_within_the_nominal_rate(runs: list[Run]) -> None:
    tested = significant = 0
    for picked in itertools.combinations(range(5), 2):
        a = [runs[i] for i in picked]
        b = [r for i, r in enumerate(runs) if i not in picked]
        for indicator in INDICATORS:
            rows = compare_runs([a[0], b[0]], indicator, members=[a, b]).rows
            tested += sum(r.pvalue is not None for r in rows)
            significant += sum(r.significant for r in rows)
    assert tested > 400
    assert significant <= ALPHA * tested


def test_one_run_per_side_marks_nothing_and_says_why(runs: list[Run]) -> None:
    cmp = compare_runs(runs[:2], "p99")
    assert cmp.note == ONE_RUN and cmp.tested == 0
    assert not any(r.significant for r in cmp.rows)
    assert all(r.test == "none: one run per side" for r in cmp.rows)
    assert any(r.ratios[1] is not None for r in cmp.rows)  # the ratios are shown
