"""Known answers: each case measures what it claims. A test build of the
agent injects a known effect (a delay in the measured path, a broken
primitive, a fake clock, a runaway thread) and the figures or checks must
show it. No absolute time is asserted: only the injected amount, which the
busy-wait guarantees, and comparisons within one test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

D = 200_000  # ns: far above this machine's typical switch time, far below its duration


def samples(
    result: Any, case: str, series: str, point: dict[str, int] | None = None
) -> np.ndarray:
    c = result.run.case(case)
    assert c is not None, result.stderr
    s = c.find(series, point)
    assert s is not None and s.samples is not None and len(s.samples) > 10, (case, series)
    return cast("np.ndarray", s.samples)


def test_test_build_says_so(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    r = run_agent(test_agent, ["CAL-REF:repeats=10"])
    assert r.run.hello["build"]["test_hooks"] is True


@pytest.mark.parametrize(
    ("site", "case", "series", "point"),
    [
        # A switch holds the yield, a hand-over the give, only where priorities
        # order who runs when (without them the other thread may run first).
        pytest.param(
            "yield_delay",
            "THR-SW:n=2:duration_ms=150",
            "switch",
            {"n": 2},
            marks=pytest.mark.realtime,
        ),
        pytest.param(
            "give_delay",
            "SEM-SHF:duration_ms=150",
            "give_to_run",
            None,
            marks=pytest.mark.realtime,
        ),
        ("ref_delay", "CAL-REF:repeats=50", "t_std", None),
    ],
)
def test_injected_delay_shows_in_the_figure(
    test_agent: Path, run_agent: Callable[..., Any],
    site: str,
    case: str,
    series: str,
    point: dict[str, int] | None,
) -> None:
    case_id = case.split(":")[0]
    base = samples(run_agent(test_agent, [case]), case_id, series, point)
    slow = samples(run_agent(test_agent, ["--inject", f"{site}={D}", case]), case_id, series, point)
    # Every sample contains the busy-wait, so none can be shorter than it...
    assert slow.min() >= D
    # ...and without it nothing forces one that long: the injection, not the
    # machine, made the difference. (Minima, not two runs' medians: a busy
    # machine moves medians, hardly the quickest sample.)
    assert base.min() < D


def test_broken_semaphore_breaks_the_shuffle(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(test_agent, ["--inject", "sem_noblock=1", "SEM-SHF:duration_ms=100"])
    case = r.run.case("SEM-SHF")
    assert case is not None
    order = [c for c in case.checks if c.name == "order"]
    assert order and order[0].verdict == "fail"
    assert case.outcome == "failed" and r.code == 1
    assert r.run.bye is not None and r.run.bye["result"] == "failed"


def test_real_semaphore_keeps_the_order(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    r = run_agent(test_agent, ["SEM-SHF:duration_ms=100"])
    case = r.run.case("SEM-SHF")
    assert case is not None and [c.verdict for c in case.checks] == ["pass"]


def test_clock_stepping_back_is_detected(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    good = run_agent(test_agent, ["CAL-TIMER:reads=20000:rounds=100"])
    bad = run_agent(test_agent, ["--inject", "clock_back=1000", "CAL-TIMER:reads=20000:rounds=100"])
    verdict = {c.name: c.verdict for c in good.run.case("CAL-TIMER").checks}
    assert verdict["monotonic"] == "pass"
    checks = {c.name: c for c in bad.run.case("CAL-TIMER").checks}
    assert checks["monotonic"].verdict == "fail"
    assert " 0 backward" not in checks["monotonic"].detail
    assert bad.run.case("CAL-TIMER").outcome == "failed"


def test_cross_cpu_skew_is_detected(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    import os

    allowed = sorted(os.sched_getaffinity(0))  # a cpuset may leave fewer than the machine's
    if len(allowed) < 2:
        pytest.skip("needs two CPUs the tests may use")
    args = ["--cpu", str(allowed[1]), "CAL-TIMER:reads=1000:rounds=2000"]
    bad = run_agent(test_agent, ["--inject", "clock_skew=1000000", *args])
    checks = {c.name: c.verdict for c in bad.run.case("CAL-TIMER").checks}
    assert checks["cross_cpu"] == "fail"
    back = bad.run.case("CAL-TIMER").find("xcpu_back")
    fwd = bad.run.case("CAL-TIMER").find("xcpu_fwd")
    # One direction sees the skew as time gained, the other as time lost.
    assert min(back.min, fwd.min) <= -900_000


def test_runaway_case_is_stopped_by_the_watchdog(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(
        test_agent,
        [
            "--inject",
            "ignore_stop=1",
            "--deadline-slack",
            "500",
            "THR-SW:n=2:duration_ms=100",
            "CAL-REF:repeats=10",
        ],
        timeout=60,
    )
    assert r.code == 3
    case = r.run.case("THR-SW")
    assert case is not None and case.outcome == "error"
    assert "deadline" in case.reason
    # The deadline is the only finding (besides what the environment lacks).
    env = {"not_realtime", "mlock"}
    assert [w.code for w in r.run.all_warnings() if w.code not in env] == ["deadline"]
    assert r.run.bye is not None and r.run.bye["result"] == "error"
    assert r.run.case("CAL-REF") is None  # the run ended: nothing after the runaway ran
