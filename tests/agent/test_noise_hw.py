"""NOISE-HW on Linux: a user-space agent cannot turn interrupts off, so the
case drives the kernel's hwlat tracer, and where the kernel has none (or no
tracefs) it is unsupported and says which, never a figure from anything
else. The tracer's own known answer needs a kernel that has it: the QEMU
guest test (tests/e2e/test_noise_hw_guest.py); the loop the agent runs with
interrupts off has the board's (tests/e2e/test_noise_hw_board.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rtbench.model import CaseResult

Runner = Callable[..., Any]
TRACERS = [
    Path("/sys/kernel/tracing/available_tracers"),
    Path("/sys/kernel/debug/tracing/available_tracers"),
]


def _has_hwlat() -> bool:
    for p in TRACERS:
        try:
            return "hwlat" in p.read_text().split()
        except OSError:
            continue
    return False


def _case(result: Any) -> CaseResult:
    c = result.run.case("NOISE-HW")
    assert isinstance(c, CaseResult), result.stderr
    return c


@pytest.mark.skipif(_has_hwlat(), reason="this kernel has the hwlat tracer")
def test_without_the_hwlat_tracer_it_is_unsupported(run_agent: Runner, agent: Path) -> None:
    c = _case(run_agent(agent, ["NOISE-HW:duration_ms=10"]))
    assert c.outcome == "unsupported"
    assert "cannot turn interrupts off" in c.reason
    assert "CONFIG_HWLAT_TRACER" in c.reason or "no tracefs" in c.reason
    assert c.series == []


def test_width_must_leave_interrupts_on(run_agent: Runner, agent: Path) -> None:
    c = _case(run_agent(agent, ["NOISE-HW:duration_ms=10:window_us=1000:width_us=1000"]))
    assert c.outcome == "error"
    assert "width_us < window_us" in next(ch.detail for ch in c.checks if ch.name == "params")
