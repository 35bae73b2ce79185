"""Criteria files for `rtbench check`: paths, bounds, relative bounds, the
three outcomes and their exit code, and the JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_analysis_fixtures import C, S, build_run, cal_ref

from rtbench.analysis.criteria import (
    CriteriaError,
    evaluate,
    exit_code,
    load_criteria,
    parse_criteria,
    parse_path,
)
from rtbench.io.junit import write_junit
from rtbench.model import Run

US = 1000


def make_run(scale: int = 1) -> Run:
    return build_run([
        cal_ref(1000),
        C("THR-SW", [S("switch", [i * scale for i in range(1, 1001)], {"n": n}) for n in (2, 10)]),
        C("SEM-SHF", [S("give_to_run", [2 * US * scale] * 100)]),
    ])  # fmt: skip


def test_paths() -> None:
    assert parse_path("THR-SW.switch[n=2].p99.9") == ("THR-SW", "switch", "n=2", "p99.9")
    assert parse_path("THR-SW.switch[ m=1 , n=2 ].max") == ("THR-SW", "switch", "m=1,n=2", "max")
    assert parse_path("SEM-SHF.give_to_run.p99") == ("SEM-SHF", "give_to_run", None, "p99")
    assert parse_path("run.stars") == ("run", "", None, "stars")
    for bad in ("THR-SW.switch", "switch.p99", "run.max", "THR-SW.switch[n=2.p99"):
        with pytest.raises(CriteriaError):
            parse_path(bad)


def outcomes_of(doc: dict[str, dict[str, float]], baseline: Run | None = None) -> list[str]:
    return [o.verdict for o in evaluate(make_run(), parse_criteria(doc), baseline)]


def test_absolute_bounds() -> None:
    # switch[n=2] is 1..1000 ns: p99 = 990 ns, max = 1000 ns
    assert outcomes_of({
        "THR-SW.switch[n=2].p99": {"max_ns": 990},
        "THR-SW.switch[n=2].max": {"max_us": 0.999},
        "THR-SW.switch[n=10].min": {"min": 1, "max": 1},
        "SEM-SHF.give_to_run.mean": {"min_us": 2.5},
        "SEM-SHF.give_to_run.n": {"min": 100},
        "SEM-SHF.give_to_run.score": {"max": 2.0},
        "run.composite_score": {"max": 1.0},
    }) == ["passed", "failed", "passed", "failed", "passed", "passed", "failed"]  # fmt: skip


def test_relative_bounds_need_a_baseline() -> None:
    doc = {"SEM-SHF.give_to_run.max": {"max_ratio": 1.2}}
    assert outcomes_of(doc) == ["error"]
    assert outcomes_of(doc, make_run()) == ["passed"]
    assert outcomes_of(doc, build_run([C("SEM-SHF", [S("give_to_run", [1000])])])) == ["failed"]


def test_unknown_indicators_are_errors_with_a_reason() -> None:
    run = make_run()
    crit = parse_criteria({
        "NOPE.x.max": {"max": 1},
        "THR-SW.nope.max": {"max": 1},
        "THR-SW.switch[n=3].max": {"max": 1},
        "THR-SW.switch.max": {"max": 1},
    })  # fmt: skip
    got = evaluate(run, crit)
    assert [o.verdict for o in got] == ["error"] * 4
    assert "no case NOPE" in got[0].message
    assert "no series 'nope' (it has: switch)" in got[1].message
    assert "no point [n=3]" in got[2].message
    assert "several points ([n=2], [n=10])" in got[3].message
    assert exit_code(got) == 2


def test_exit_codes() -> None:
    ok = evaluate(make_run(), parse_criteria({"run.stars": {"min": 0}}))
    bad = evaluate(make_run(), parse_criteria({"run.stars": {"min": 6}}))
    assert (exit_code(ok), exit_code(bad), exit_code(ok + bad)) == (0, 1, 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no criterion"),
        ('"THR-SW.switch.p99" = 5', "table of bounds"),
        ('"THR-SW.switch.p99" = { below = 5 }', "unknown bound 'below'"),
        ('"THR-SW.switch.n" = { max_us = 5 }', "max_us is for times"),
        ('"THR-SW.switch.p99" = { max_us = "5" }', "must be a number"),
        ("not toml at all", "not valid TOML"),
    ],
)
def test_bad_files(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(CriteriaError, match=message):
        load_criteria(f)


def test_junit_has_one_testcase_per_criterion(tmp_path: Path) -> None:
    crit = parse_criteria({
        "THR-SW.switch[n=2].max": {"max_us": 5},
        "THR-SW.switch[n=2].p50": {"max_us": 0.1},
        "NOPE.x.max": {"max": 1},
    })  # fmt: skip
    out = tmp_path / "j.xml"
    write_junit(evaluate(make_run(), crit), out)
    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == list(crit_key.key for crit_key in crit)
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    assert cases[1].find("failure") is not None and cases[2].find("error") is not None


def test_a_case_that_cannot_apply_skips_its_criteria_and_junit_says_so(tmp_path: Path) -> None:
    run = make_run()
    shf = run.case("SEM-SHF")
    assert shf is not None
    shf.outcome, shf.reason = "skipped", "needs real-time priority"
    outcomes = evaluate(
        run,
        parse_criteria({
            "SEM-SHF.give_to_run.max": {"max_us": 0.001},
            "THR-SW.switch[n=2].max": {"max_us": 1000},
        }),
    )  # fmt: skip
    assert [o.verdict for o in outcomes] == ["skipped", "passed"]
    assert "needs real-time priority" in outcomes[0].message
    assert exit_code(outcomes) == 0  # skips are allowed: docs/outcomes.md
    path = tmp_path / "junit.xml"
    write_junit(outcomes, path)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("skipped") == "1"
    skipped = suite.findall("testcase/skipped")
    assert len(skipped) == 1 and "needs real-time priority" in (skipped[0].get("message") or "")


def test_criteria_follow_the_series_kind() -> None:
    """A count is judged as a count: no time bound, score, star or
    percentile of it; its max is shown as a count, never as µs."""
    run = build_run([
        cal_ref(1000),
        C("IRQ-SUS", [S("losses", [949], {"period_ns": 20000}, kind="count", unit="count")]),
        C("SEM-SHF", [S("give_to_run", [2 * US] * 100)]),
    ])  # fmt: skip
    got = evaluate(run, parse_criteria({
        "IRQ-SUS.losses.max": {"max": 1000},
        "IRQ-SUS.losses.p99": {"max": 1000},
        "IRQ-SUS.losses.score": {"max": 1},
        "IRQ-SUS.losses.stars": {"min": 1},
        "SEM-SHF.give_to_run.max": {"max_us": 3},  # the control: a latency
    }))  # fmt: skip
    assert [o.verdict for o in got] == ["passed", "error", "error", "error", "passed"]
    assert got[0].message == "949 count"
    assert "n, min and max only, no p99" in got[1].message
    assert "only latencies are scored" in got[2].message
    assert "only latencies are rated" in got[3].message
    assert got[4].message == "2.000 µs"
    (timed,) = evaluate(run, parse_criteria({"IRQ-SUS.losses.max": {"max_us": 1}}))
    assert timed.verdict == "error" and "a time bound does not apply" in timed.message


def test_stars_of_a_not_realtime_run_are_skipped_with_why() -> None:
    run = build_run([C("SEM-SHF", [S("give_to_run", [2 * US] * 100)])], realtime=False)
    got = evaluate(run, parse_criteria({"run.stars": {"min": 3}, "SEM-SHF.give_to_run.stars": {
        "min": 3}}))  # fmt: skip
    assert [o.verdict for o in got] == ["skipped", "skipped"]
    assert "no real-time priority" in got[0].message
    rt = build_run([C("SEM-SHF", [S("give_to_run", [2 * US] * 100)])])
    assert [o.verdict for o in evaluate(rt, parse_criteria({"run.stars": {"min": 3}}))] == [
        "passed"
    ]  # the control
