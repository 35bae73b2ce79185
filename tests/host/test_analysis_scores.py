"""Known-answer tests of scores (indicator / T_std), the composite, and
the determinism curves (growth per task)."""

from __future__ import annotations

import math

import pytest
from test_analysis_fixtures import C, S, build_run, cal_ref

from rtbench.analysis.determinism import curves, refusal, slope
from rtbench.analysis.scores import (
    composite_parts,
    composite_score,
    fmt_score,
    geometric_mean,
    indicator_scores,
)
from rtbench.reference import load_datasets
from rtbench.reports.figures import figures_table


def test_scores_are_figures_over_t_std() -> None:
    run = build_run([cal_ref(1000), C("SEM-SHF", [S("give_to_run", [1000, 3000])])])
    scores = {(s.case, s.indicator): s for s in indicator_scores(run)}
    assert ("CAL-REF", "mean") not in scores  # T_std itself is not scored
    assert scores["SEM-SHF", "mean"].score == 2.0
    assert scores["SEM-SHF", "max"].score == 3.0
    assert scores["SEM-SHF", "max"].value_ns == 3000


def test_a_slow_boards_scores_carry_information() -> None:
    """Issue 20: on the emulated Cortex-M3 T_std is 24,149 µs and a 9.5 µs
    latency scores 0.00039: three fixed decimals showed every score as
    0.000. Shown with four significant digits, scores that differ read
    differently, and none reads as zero."""
    run = build_run(
        [
            cal_ref(24_149_000),
            C("SEM-SHF", [S("give_to_run", [9_500] * 10)]),
            C("THR-SW", [S("switch", [19_000] * 10, {"n": 2})]),
        ]
    )
    table = figures_table(run)
    [score] = [c for c in table.columns if c.key == "score"]
    shown = {r["case"]: score.cell(r).plain for r in table.rows if r["score"] is not None}
    assert shown == {"SEM-SHF": "0.0003934", "THR-SW": "0.0007868"}, shown
    assert fmt_score(2.0) == "2.000" and fmt_score(1234.5) == "1234" and fmt_score(None) == "-"


def test_no_t_std_no_scores() -> None:
    run = build_run([C("SEM-SHF", [S("give_to_run", [1000, 3000])])])
    assert all(s.score is None for s in indicator_scores(run))
    assert composite_score(run) is None


def test_composite_is_the_geometric_mean_of_headline_mean_scores() -> None:
    run = build_run(
        [
            cal_ref(1000),
            C("THR-SW", [S("switch", [2000] * 10, {"n": 2}), S("switch", [5000] * 10, {"n": 10})]),
            C("SEM-SHF", [S("give_to_run", [8000] * 10)]),
            C("MUT-ARN", [S("lock", [99000] * 10)]),  # not a headline case
        ]
    )
    parts = composite_parts(run)
    assert [(p.case, p.point, p.score) for p in parts] == [
        ("THR-SW", {"n": 2}, 2.0),  # the fewest threads
        ("SEM-SHF", {}, 8.0),
    ]
    assert composite_score(run) == pytest.approx(4.0)


def test_composite_of_published_scores() -> None:
    """Dataset A publishes the four headline scores per system: the composite
    of each is their geometric mean, and RGMP-ROS beats RTLinux on each."""
    (a,) = [d for d in load_datasets() if d.id == "A"]
    by_os: dict[str, list[float]] = {}
    for f in a.figures:
        by_os.setdefault(f.os, []).append(f.value)
    assert {k: len(v) for k, v in by_os.items()} == {"RTLinux": 4, "RGMP-ROS": 4}
    for values in by_os.values():
        assert geometric_mean(values) == pytest.approx(math.prod(values) ** 0.25)
    assert all(r < t for r, t in zip(by_os["RGMP-ROS"], by_os["RTLinux"], strict=True))
    assert geometric_mean(by_os["RTLinux"]) == pytest.approx(5.5518, abs=1e-4)


def test_growth_per_task_is_the_least_squares_slope() -> None:
    ns = [2, 5, 10, 128, 1000]
    run = build_run(
        [
            C(
                "THR-SW",
                [S("switch", [1000 + 3 * n, 1000 + 3 * n, 5000 + 10 * n], {"n": n}) for n in ns]
                + [S("other", [1], {"mode": "x"})],
            )
        ]
    )
    (cv,) = curves(run)
    assert (cv.case, cv.series, cv.key, cv.xs) == ("THR-SW", "switch", "n", ns)
    # mean = (2*(1000+3n) + 5000+10n)/3 = 7000/3 + 16n/3
    assert cv.slope_mean == pytest.approx(16 / 3)
    assert cv.slope_max == pytest.approx(10.0)
    assert slope([1], [5.0]) is None and slope([2, 2], [1.0, 3.0]) is None


def test_curves_hold_the_other_point_parameters_fixed() -> None:
    series = [S("s", [100 * n + 10 * m], {"n": n, "m": m}) for n in (1, 2, 3) for m in (1, 2)]
    found = {(cv.key, tuple(sorted((cv.fixed or {}).items()))): cv for cv in
             curves(build_run([C("SEM-ARC", series)]))}  # fmt: skip
    # SEM-ARC's task count is n: no slope over m, whatever it holds.
    assert set(found) == {("n", (("m", 1),)), ("n", (("m", 2),))}
    assert found["n", (("m", 1),)].slope_mean == pytest.approx(100.0)
    # Negative control: were m declared the task count, its slope is drawn.
    over_m = curves(build_run([C("SEM-ARC", series)]), tasks=lambda case: "m")
    assert {cv.key for cv in over_m} == {"m"}
    assert [cv.slope_mean for cv in over_m if cv.fixed == {"n": 3}] == [pytest.approx(10.0)]


@pytest.mark.parametrize(
    ("case", "key"),
    [("THR-NEW", "scenario"), ("SEM-NEW", "used"), ("MQ-LAT", "size"), ("CLK-RES", "request_ns"),
     ("IRQ-SUS", "period_ns")],
)  # fmt: skip
def test_no_slope_over_a_parameter_that_is_no_task_count(case: str, key: str) -> None:
    """The sweeps issue 11 saw slopes drawn over: none is a task count."""
    series = [S("create", [1000 * x, 1000 * x + 5], {key: x}) for x in (1, 2, 3)]
    run = build_run([C(case, series)])
    assert curves(run) == []
    why = refusal(case, key, run.cases[0].series[0])
    assert why is not None and "not a task count" in why
    # Negative control: the same numbers over THR-SW's n give a slope.
    thr_sw = [S("switch", [1000 * x, 1000 * x + 5], {"n": x}) for x in (1, 2, 3)]
    thr = build_run([C("THR-SW", thr_sw)])
    assert [cv.slope_mean for cv in curves(thr)] == [pytest.approx(1000.0)]


def test_no_slope_for_a_kind_without_a_cost_per_task() -> None:
    series = [S("slice", [1000 * n], {"n": n}, kind="duration") for n in (2, 5)]
    assert curves(build_run([C("THR-SW", series)])) == []
    latency = [S("slice", [1000 * n], {"n": n}, kind="latency") for n in (2, 5)]
    assert len(curves(build_run([C("THR-SW", latency)]))) == 1
