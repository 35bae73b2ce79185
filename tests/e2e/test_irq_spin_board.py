"""IRQ-DLT and IRQ-TLT on the three RTOS firmwares (a real qemu-system-arm
under -icount): the last event of a source is measured like every other.

Two defects made it the maximum: on one CPU the raiser runs above the
spinning target, so a handler returns into it and the target resumes once
it blocks again; after its last raise it ended instead of sleeping, and the
last raised_dispatch sample was the raiser's exit (FreeRTOS 255.04 us,
uC/OS-III 104.84, uC/OS-II 73.12, against 12-16 us for every other
sample). And the last timer handler disarmed the timer inside IRQ-TLT's
window (13.00 us against 11.72 on FreeRTOS). Under -icount every event of
a source takes the same path, so the last sample is no larger than the
largest of the others (give or take a tick of the stamp counter). And no
event finds the target asleep.
"""

from __future__ import annotations

import pytest
import tools
from boards import measure_board

BOARD = "mps2-an385"
PORTS = ("freertos", "ucos3", "ucos2")

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")


@pytest.mark.parametrize("port", PORTS)
def test_the_last_event_is_measured_like_the_others(port: str) -> None:
    tools.firmware(port, BOARD)
    # The quick suite's parameters.
    run, _ = measure_board(
        f"qemu:{port}-{BOARD}",
        ["IRQ-DLT:count=1000:period_us=500", "IRQ-TLT:count=1000:period_us=500"],
    )
    names: set[str] = set()
    tick = run.hello["clock"]["resolution_ns"]
    assert 0 < tick < 1000
    # Every event comes while the target spins: it naps until the last
    # tick before one (it slept through every other event when its nap
    # ended on the tick after: 499 timer samples of 1000). The raiser,
    # asleep between raises, can only wake on a tick: two events a tick,
    # the second back to back, so half of them.
    dlt = run.case("IRQ-DLT")
    assert dlt is not None
    delivery = {k.name: k.detail for k in dlt.checks}
    assert "0 that found the thread asleep" in delivery["timer_delivery"]
    assert "0 that found the thread asleep" in delivery["raised_delivery"]
    counts = {s.name: s.n for s in dlt.series}
    assert counts == {"timer_dispatch": 1000, "raised_dispatch": 500}, counts
    for case in run.cases:
        assert case.outcome == "passed", (case.case, case.checks)
        for s in case.series:
            names.add(s.name)
            assert s.samples is not None and len(s.samples) == s.n > 100, (s.name, s.n)
            last, others = int(s.samples[-1]), s.samples[:-1]
            # Give or take a tick of the stamp counter (25 MHz: 40 ns), read
            # by 32 ns instructions: the last handler's disarm, before its
            # stamps, moves them against the counter's ticks.
            assert last <= int(others.max()) + tick, (case.case, s.name, last, int(others.max()))
    assert names == {"timer_dispatch", "raised_dispatch", "timer_to_thread", "raised_to_thread"}
