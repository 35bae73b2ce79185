"""Known answers for NOISE-OS (oslat's method): the busy-polling thread's
loop times add up to the time it polled, every gap at or above the
threshold is a noise sample with its start, and a higher-priority thread
holding the CPU for a known time shows as that many gaps at least that
long; with a threshold nothing can reach, the same holds go unseen and the
blocker check fails (its negative control). No absolute time is asserted."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtbench.model import CaseResult

Runner = Callable[..., Any]
# The first CPU the tests may use (a taskset or cpuset may leave out CPU 0).
FIRST = min(os.sched_getaffinity(0))
CPU = ["--cpu", str(FIRST)]


def _case(result: Any) -> CaseResult:
    c = result.run.case("NOISE-OS")
    assert isinstance(c, CaseResult), result.stderr
    return c


def test_loop_and_noise_add_up(run_agent: Runner, agent: Path) -> None:
    c = _case(run_agent(agent, [*CPU, "NOISE-OS:duration_ms=200:threshold_ns=2000"]))
    assert c.outcome == "passed", c.checks
    loop, noise, at = (c.find(n) for n in ("loop", "noise", "noise_at"))
    assert loop is not None and noise is not None and at is not None
    assert loop.kind == "duration" and at.kind == "timestamp" and noise.kind == "latency"
    assert loop.samples is None or len(loop.samples) == 0  # histogram only
    assert loop.n > 1000 and noise.n == at.n <= loop.n
    assert noise.samples is not None and at.samples is not None
    assert (noise.samples >= 2000).all()
    assert (np.diff(at.samples) > 0).all()  # in the order they happened
    # Every noise gap is one of the loop's iterations: the loop's max is the
    # largest gap, and the gaps' sum is part of the loop's.
    assert loop.max == (noise.max if noise.n else loop.max)
    assert noise.sum <= loop.sum
    polled = [ch for ch in c.checks if ch.name == "polled"]
    assert len(polled) == 1 and f"{loop.n} loop iterations" in polled[0].detail


@pytest.mark.realtime
def test_blocker_holds_show_as_gaps(run_agent: Runner, agent: Path) -> None:
    hold_us, count = 3000, 4
    args = f"NOISE-OS:duration_ms=400:blocker_us={hold_us}:blocker_count={count}"
    c = _case(run_agent(agent, [*CPU, args]))
    assert c.outcome == "passed", c.checks
    noise = c.find("noise")
    assert noise is not None and noise.samples is not None
    assert int((noise.samples >= hold_us * 1000).sum()) >= count
    blocker = next(ch for ch in c.checks if ch.name == "blocker")
    assert blocker.verdict == "pass" and f"{count} holds" in blocker.detail
    # The negative control: the same holds, a threshold no gap reaches.
    blind = _case(run_agent(agent, [*CPU, f"{args}:threshold_ns=1000000000"]))
    assert blind.outcome == "failed"
    assert next(ch for ch in blind.checks if ch.name == "blocker").verdict == "fail"


def test_one_series_set_per_cpu(run_agent: Runner, agent: Path) -> None:
    c = _case(run_agent(agent, ["--cpus", str(FIRST), "NOISE-OS:duration_ms=100"]))
    assert c.outcome == "passed", c.checks
    assert {(s.name, s.point.get("cpu")) for s in c.series} == {
        ("loop", FIRST),
        ("noise", FIRST),
        ("noise_at", FIRST),
    }
