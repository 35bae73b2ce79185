"""NOISE-HW on the emulated board (FreeRTOS, -icount): with interrupts off
nothing can take the CPU from the loop but the test firmware's injected
stall (`hw_stall=NS`: a busy-wait of NS in the middle of every window), so
the case's gaps are that stall's known answer: one per window, each at least
NS and shorter than NS plus two of the loop's own iterations; without the
stall the same run sees no gap at all."""

from __future__ import annotations

import numpy as np
import pytest
from boards import board_case

from rtbench.model import CaseResult

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

STALL = 200_000  # ns
WINDOWS = 4
ARGS = [f"NOISE-HW:duration_ms={WINDOWS * 20}:window_us=20000:width_us=10000"]


def _run(args: list[str]) -> CaseResult:
    return board_case("qemu:freertos-mps2-an385?flavor=test", args, "NOISE-HW")


def test_the_injected_stall_is_the_only_gap() -> None:
    quiet = _run(ARGS)
    stalled = _run(["--inject", f"hw_stall={STALL}", *ARGS])
    for c in (quiet, stalled):
        assert c.outcome == "passed", c.checks
        assert [ch.name for ch in c.checks] == ["sampled"]
        assert f"{WINDOWS} windows" in c.checks[0].detail
    q, s, at, loop = (
        quiet.find("noise"),
        stalled.find("noise"),
        stalled.find("noise_at"),
        stalled.find("loop"),
    )
    assert q is not None and s is not None and at is not None and loop is not None
    assert q.n == 0  # interrupts off on an emulated CPU: nothing takes it
    assert s.n == at.n == WINDOWS and s.samples is not None and at.samples is not None
    assert loop.min is not None and loop.max == s.max
    # Each gap is the stall and the iteration it sat in; one per window.
    assert (s.samples >= STALL).all() and (s.samples < STALL + 2 * 4 * loop.min).all()
    assert (np.diff(at.samples) > 0).all()
