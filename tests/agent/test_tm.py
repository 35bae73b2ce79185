"""Known answers for the TM throughput cases (Thread-Metric's method): a
score sample per window; a busy-wait injected into every semaphore call
bounds TM-SYNC's score by the delay (two calls a round) far below the
plain score, and stays below it when the monitor wakes late every window
(its workers count on meanwhile: a rate over the nominal window would
overstate the machine); the preemptive chain counts every worker every round, and
with every worker given the same priority (a deliberately wrong create) it
does not, and the check fails. No absolute time is asserted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rtbench.model import CaseResult

Runner = Callable[..., Any]
D = 20_000  # ns
CASES = ["TM-COOP", "TM-PRE", "TM-IRQ", "TM-IRQ-PRE", "TM-MSG", "TM-SYNC", "TM-MEM", "TM-BASIC"]


def _case(result: Any, case: str) -> CaseResult:
    c = result.run.case(case)
    assert isinstance(c, CaseResult), result.stderr
    return c


@pytest.mark.realtime
def test_every_case_scores_every_window(run_agent: Runner, agent: Path) -> None:
    r = run_agent(agent, [f"{c}:duration_ms=200:window_ms=50" for c in CASES])
    for case in CASES:
        c = _case(r, case)
        assert c.outcome == "passed", (case, c.checks)
        score = c.find("score")
        assert score is not None and score.kind == "rate" and score.unit == "Hz"
        assert score.n == 4 and score.min is not None and score.min > 0, case
    for case in ("TM-COOP", "TM-PRE", "TM-IRQ-PRE"):
        assert [ch.verdict for ch in _case(r, case).checks if ch.name == "even"] == ["pass"]


def test_a_slow_primitive_lowers_the_score_in_proportion(
    run_agent: Runner, test_agent: Path
) -> None:
    args = ["TM-SYNC:duration_ms=200:window_ms=50"]
    base = _case(run_agent(test_agent, args), "TM-SYNC").find("score")
    slow = _case(run_agent(test_agent, ["--inject", f"op_delay={D}", *args]), "TM-SYNC")
    s = slow.find("score")
    assert base is not None and s is not None and s.max is not None and base.mean is not None
    assert s.max <= 1e9 / (2 * D)  # a take and a give, each at least D
    assert s.mean is not None and base.mean > 3 * s.mean


def test_a_late_monitor_does_not_raise_the_score(run_agent: Runner, test_agent: Path) -> None:
    # The monitor sleeps 60 ms past every 20 ms window, so the first window
    # it scores lasts ~80 ms and the others ~60: over the nominal 20 ms a
    # score read 3-4x the rate the injected delay allows (95,400 Hz).
    late = 60_000_000
    args = ["--inject", f"op_delay={D}", "--inject", f"wake_late={late}"]
    c = _case(run_agent(test_agent, [*args, "TM-SYNC:duration_ms=100:window_ms=20"]), "TM-SYNC")
    s = c.find("score")
    assert c.outcome == "passed", c.checks
    assert s is not None and s.n == 5 and s.max is not None
    assert s.max <= 1e9 / (2 * D)
    # The lateness took effect (five windows, each 60 ms late at least) and
    # the workers counted through it.
    assert c.duration_ns is not None and c.duration_ns >= 5 * late, c.duration_ns
    assert s.min is not None and s.min > 0


@pytest.mark.realtime
def test_the_chain_breaks_without_priorities(run_agent: Runner, test_agent: Path) -> None:
    # new_prio=-99: every worker created at the lowest priority, so the
    # lowest one never gives the CPU to the next.
    c = _case(
        run_agent(test_agent, ["--inject", "new_prio=-99", "TM-PRE:duration_ms=200"]), "TM-PRE"
    )
    assert c.outcome == "failed"
    assert [ch.verdict for ch in c.checks if ch.name == "even"] == ["fail"]
