"""The star rubric: each rung of the ladder reached by a known series, the
not_realtime cap, failed checks, and user rubric files."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_analysis_fixtures import C, S, build_run, cal_ref

from rtbench.analysis.rating import (
    NOT_REALTIME_WHY,
    RubricError,
    load_rubric,
    overall_rating,
    rate_run,
    unrated_because,
)

US = 1000
BASE = [1 * US] * 10000  # THR-SW's rubric: hard 50 µs, margin 0.5, soft 500 µs, fail 100 ms


def stars_of(values: list[int], **kwargs: object) -> int:
    run = build_run([C("THR-SW", [S("switch", values, {"n": 2})])], **kwargs)
    (r,) = rate_run(run)
    return r.stars


@pytest.mark.parametrize(
    ("values", "stars"),
    [
        ([*BASE, 20 * US], 5),  # max <= 0.5 x hard
        ([*BASE, 40 * US], 4),  # max <= hard
        ([*BASE, 100 * US], 3),  # max > hard, p99.9 <= soft
        (BASE + [600 * US] * 50, 2),  # p99.9 > soft, p99 <= soft
        (BASE + [600 * US] * 500, 1),  # p99 > soft
        ([*BASE, 200000 * US], 0),  # max > fail: a stall
    ],
)
def test_each_rung_of_the_ladder(values: list[int], stars: int) -> None:
    assert stars_of(values) == stars


def test_histogram_only_series_are_rated_by_their_bounds() -> None:
    assert stars_of(BASE + [600 * US] * 50, samples=False) == 2


def test_not_realtime_gets_no_stars() -> None:
    # Negative control: the same figures with real-time priority are rated.
    assert stars_of(BASE) == 5
    run = build_run([C("THR-SW", [S("switch", BASE)])], realtime=False)
    assert rate_run(run) == []
    assert unrated_because(run) == NOT_REALTIME_WHY
    assert unrated_because(build_run([C("THR-SW", [S("switch", BASE)])])) is None


def test_a_user_rubric_cannot_rate_a_not_realtime_run(tmp_path: Path) -> None:
    f = tmp_path / "r.toml"
    f.write_text(
        "not_realtime_cap = 5\n[thresholds.default]\nhard_us = 1\nsoft_us = 1\nfail_us = 1e6\n"
    )
    rb = load_rubric(f)
    run = build_run([C("SEM-SHF", [S("give_to_run", [100])])], realtime=False)
    assert rate_run(run, rb) == []


def test_a_user_rubric_replaces_the_thresholds(tmp_path: Path) -> None:
    f = tmp_path / "r.toml"
    f.write_text('[thresholds.default]\nhard_us = 5000\nsoft_us = 9000\nfail_us = 1e6\n'
                 '[thresholds."THR-*"]\nhard_us = 0.5\n')  # fmt: skip
    rb = load_rubric(f)
    run = build_run([C("THR-SW", [S("switch", [*BASE, 100 * US])]),
                     C("SEM-SHF", [S("give_to_run", [*BASE, 100 * US])])])  # fmt: skip
    got = {r.case: r.stars for r in rate_run(run, rb)}
    assert got == {"SEM-SHF": 5, "THR-SW": 3}  # THR-*: hard 0.5 µs, soft 9 ms inherited
    assert rb.pattern_for("THR-SW", "switch") == "THR-*"


def test_failed_check_fails_the_case_and_calibration_is_not_rated() -> None:
    run = build_run([
        cal_ref(),
        C("SEM-B-REL", [], result="failed", checks=[("order", "fail")]),
        C("SEM-SHF", [S("give_to_run", BASE)]),
    ])  # fmt: skip
    ratings = rate_run(run)
    assert [(r.case, r.stars) for r in ratings] == [("SEM-B-REL", 0), ("SEM-SHF", 5)]
    overall = overall_rating(ratings)
    assert overall.stars == 0 and "SEM-B-REL" in overall.reason and "order" in overall.reason
    assert overall_rating([]).stars == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("margin = 0.5\n", r"needs a \[thresholds.default\] table"),
        ("[thresholds.default]\nhard_us = 1\nsoft_us = 1\n", "fail_us is missing"),
        ("soft_pct = 42\n[thresholds.default]\nhard_us=1\nsoft_us=1\nfail_us=1\n", "soft_pct"),
        ("[thresholds.default]\nhard_us = -1\nsoft_us = 1\nfail_us = 1\n", "number >= 0"),
        (
            "[thresholds.default]\nhard_us=1\nsoft_us=1\nfail_us=1\n[thresholds.X]\nhrd_us=1\n",
            "unknown key",
        ),
        ("this is not toml", "not valid TOML"),
    ],
)
def test_bad_rubrics_are_refused_with_a_reason(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "r.toml"
    f.write_text(text)
    with pytest.raises(RubricError, match=message):
        load_rubric(f)


def test_the_shipped_rubric() -> None:
    rb = load_rubric()
    assert rb.source == "built-in rating.toml"
    assert rb.for_series("THR-SW", "switch").hard_us == 50
    assert rb.for_series("XYZ", "s") == rb.thresholds["default"]
    assert rb.skips("CAL-REF", "t_std") and rb.skips("JIT-PER", "interval")
    assert not rb.skips("JIT-PER", "latency")
