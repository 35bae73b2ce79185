"""Known answers for the SEM family (SEM-B-LCK, SEM-B-REL, SEM-NEW, SEM-ARN,
SEM-ARC, SEM-TAKE): broken semaphores make the behaviour checks fail, the
real one passes, and a busy-wait injected into every port call shows up in
each timed interval that contains one call. No absolute time is asserted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import drop_privileges, public_copy

D = 200_000  # ns: far above a semaphore call or switch here, far below a test's patience


def verdicts(result: Any, case_id: str) -> dict[str, str]:
    case = result.run.case(case_id)
    assert case is not None, result.stderr
    return {c.name: c.verdict for c in case.checks}


# ---- behaviour: SEM-B-REL, SEM-B-LCK --------------------------------------


@pytest.mark.realtime
def test_release_order_real_semaphore_passes(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(test_agent, ["SEM-B-REL:waiters=8"])
    assert verdicts(r, "SEM-B-REL") == {"release_order": "pass"}
    assert r.run.case("SEM-B-REL").outcome == "passed" and r.code == 0


@pytest.mark.realtime
def test_release_order_fifo_semaphore_fails(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(test_agent, ["--inject", "sem_fifo=1", "SEM-B-REL:waiters=8"])
    case = r.run.case("SEM-B-REL")
    assert case is not None
    check = case.checks[0]
    assert check.name == "release_order" and check.verdict == "fail"
    # The FIFO semaphore woke them exactly in arrival order.
    arrival = check.detail.split("priority order ")[1].split(";")[0]
    woke = check.detail.split("gives woke ")[1].split(" (")[0]
    assert arrival == woke
    assert case.outcome == "failed" and r.code == 1


@pytest.mark.realtime
def test_counting_semantics_real_semaphore_passes(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(test_agent, ["SEM-B-LCK:count=3:rounds=20"])
    assert verdicts(r, "SEM-B-LCK") == {
        "take_until_zero": "pass",
        "give_increments": "pass",
        "blocks_at_zero": "pass",
        "give_wakes_waiter": "pass",
        "waiter_consumes": "pass",
    }
    assert r.code == 0


@pytest.mark.realtime
def test_counting_semantics_nonblocking_take_fails(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(test_agent, ["--inject", "sem_noblock=1", "SEM-B-LCK:count=3:rounds=20"])
    v = verdicts(r, "SEM-B-LCK")
    # A take that never blocks never says EAGAIN and never waits at 0.
    assert v["take_until_zero"] == "fail"
    assert v["give_increments"] == "fail"
    assert v["blocks_at_zero"] == "fail"
    assert r.run.case("SEM-B-LCK").outcome == "failed" and r.code == 1


# ---- known answers for the timed cases -------------------------------------

TIMED = [
    "SEM-NEW:iterations=300",
    "SEM-ARN:iterations=300",
    "SEM-TAKE:iterations=300",
    "SEM-ARC:waiters=2,16:rounds=10",
]
# Under contention the interval holds the waiter's call only when priorities
# order who runs when.
CONTENDED = pytest.mark.realtime
# (case, series, point, samples expected)
SERIES = [
    ("SEM-NEW", "create", {"used": 0}, 300),
    ("SEM-NEW", "delete", {"used": 0}, 300),
    ("SEM-NEW", "create", {"used": 1}, 300),
    ("SEM-NEW", "delete", {"used": 1}, 300),
    ("SEM-ARN", "take", None, 300),
    ("SEM-ARN", "give", None, 300),
    ("SEM-TAKE", "available", None, 300),
    pytest.param("SEM-TAKE", "unavailable", None, 300, marks=CONTENDED),
    pytest.param("SEM-ARC", "acquire", {"n": 2}, 20, marks=CONTENDED),
    pytest.param("SEM-ARC", "release", {"n": 2}, 20, marks=CONTENDED),
    pytest.param("SEM-ARC", "acquire", {"n": 16}, 160, marks=CONTENDED),
    pytest.param("SEM-ARC", "release", {"n": 16}, 160, marks=CONTENDED),
]


@pytest.fixture(scope="module")
def timed_runs(test_agent: Path, run_agent: Callable[..., Any]) -> tuple[Any, Any]:
    base = run_agent(test_agent, TIMED)
    slow = run_agent(test_agent, ["--inject", f"op_delay={D}", *TIMED])
    return base, slow


def _samples(
    result: Any, case: str, series: str, point: dict[str, int] | None
) -> np.ndarray:
    c = result.run.case(case)
    assert c is not None, result.stderr
    s = c.find(series, point)
    assert s is not None and s.samples is not None, (case, series, point)
    return np.asarray(s.samples)


@pytest.mark.parametrize(("case", "series", "point", "count"), SERIES)
def test_op_delay_shows_once_in_each_interval(
    timed_runs: tuple[Any, Any],
    case: str,
    series: str,
    point: dict[str, int] | None,
    count: int,
) -> None:
    base_run, slow_run = timed_runs
    for r in (base_run, slow_run):  # measured (what the OS scored is not the point)
        assert r.code in (0, 1) and r.run.bye is not None, r.stderr
    base = _samples(base_run, case, series, point)
    slow = _samples(slow_run, case, series, point)
    assert len(base) == len(slow) == count  # every attempt gave a sample
    # Each interval holds one port call: none can be shorter than the delay...
    assert slow.min() >= D
    # ...and one delay, not two: the quickest interval holds a single one.
    # (The minimum, not two runs' medians: a busy machine moves medians.)
    assert slow.min() < 2 * D


@pytest.mark.realtime
def test_contention_warns_when_priorities_run_out(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(test_agent, ["SEM-ARC:waiters=100:rounds=2"])
    case = r.run.case("SEM-ARC")
    assert case is not None and case.outcome == "passed", r.stderr
    assert [w.code for w in case.warnings] == ["priorities_repeat"]
    assert "creator at 1, waiters at 2..97" in case.warnings[0].detail
    for name in ("acquire", "release"):
        s = case.find(name, {"n": 100})
        assert s is not None and s.n == 200


# ---- without real-time priority ---------------------------------------------


@pytest.fixture(scope="module")
def public_test_agent(test_agent: Path) -> Iterator[Path]:
    with public_copy(test_agent) as exe:
        yield exe


@pytest.mark.root("dropping privileges")
def test_without_realtime_priority_checks_are_skipped(
    public_test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(
        public_test_agent,
        ["SEM-B-REL", "SEM-B-LCK", "SEM-TAKE:iterations=200"],
        preexec=drop_privileges,
    )
    assert not r.run.realtime
    # Cannot apply here: skipped with the reason, not an error of the run.
    assert verdicts(r, "SEM-B-REL") == {"release_order": "skip"}
    rel = r.run.case("SEM-B-REL")
    assert rel.outcome == "skipped" and "real-time priority" in rel.reason
    assert "real-time priority" in rel.checks[0].detail
    lck = verdicts(r, "SEM-B-LCK")
    # What does not depend on priorities is still judged, and decides the case.
    assert lck == {"take_until_zero": "pass", "give_increments": "pass",
                   "blocks_at_zero": "skip", "give_wakes_waiter": "skip",
                   "waiter_consumes": "skip"}  # fmt: skip
    assert r.run.case("SEM-B-LCK").outcome == "passed"
    take = r.run.case("SEM-TAKE")
    assert take is not None
    assert take.find("available").n == 200
    assert take.find("unavailable").n > 0
    assert r.run.bye == {"result": "passed", "records": len(r.parsed.records)}
    assert r.code == 0
