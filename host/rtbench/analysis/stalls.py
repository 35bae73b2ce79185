"""Why CLK-DUR's measuring thread stalled, from what the machine and (with
`--trace`) the kernel's own timer say.

The agent already keeps a stall out of `tick` and warns; it cannot see the
OS. The host can: RT throttling is possible only when `sched_rt_runtime_us`
is below `sched_rt_period_us`; it stops real-time threads from when their
budget is spent to the period's end, which under a sustained real-time load
is about period - runtime (50 ms by default; the tick that notices the
budget is spent moves it by a tick): a stall of half that to that plus two
ticks is consistent with it, a much shorter one is not. With
the kernel trace, a stall during which the CPU's own local-timer interrupt
did not come at its period means the CPU was not running this kernel's code
at all (a hypervisor that did not run the vCPU, or interrupts off): no
thread of this kernel is to blame. A stall that the kernel ticked through
was this kernel's choice (throttling, or a thread above the spinner).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Any

from rtbench.model import CaseResult
from rtbench.model import Warning as RunWarning

CLK_DUR = "CLK-DUR"
# A local timer this much later than the period after the previous one
# did not come on time (the kernel's own tick never waits this long).
LATE_TIMER = 1.5


def throttle_ns(machine: dict[str, Any]) -> int | None:
    """How long RT throttling can stop a real-time thread each period, or
    None when it is off or unknown."""
    thr = machine.get("rt_throttling")
    if not isinstance(thr, dict) or not thr.get("enabled"):
        return None
    runtime, period = thr.get("runtime_us"), thr.get("period_us")
    if not isinstance(runtime, int) or not isinstance(period, int) or runtime >= period:
        return None
    return (period - runtime) * 1000


def _late_timer(entries: Sequence[int], lo: int, hi: int, period: float) -> int | None:
    """The longest spacing of local-timer entries around [lo, hi) when it is
    longer than LATE_TIMER periods (the tick did not come), else None."""
    a = bisect.bisect_left(entries, lo - int(period))
    b = bisect.bisect_right(entries, hi + int(period))
    near = entries[a:b]
    if len(near) < 2:
        return hi - lo if hi - lo > LATE_TIMER * period else None
    worst = max(y - x for x, y in itertools.pairwise(near))
    return worst if worst > LATE_TIMER * period else None


def explain(
    case: CaseResult,
    machine: dict[str, Any],
    timer_entries: Sequence[int] | None = None,
    begin: int | None = None,
    kernel_period: float | None = None,
) -> None:
    """Adds warning `stall_cause` to CLK-DUR when it reported stalls:
    `timer_entries` (sorted local_timer_entry times on the measurement CPU),
    `begin` (the case's begin marker, on the same clock) and the kernel's
    tick period come from the trace, when there is one."""
    if case.case != CLK_DUR:
        return
    stall, starts = case.find("stall"), case.find("stall_start")
    if stall is None or starts is None or stall.samples is None or starts.samples is None:
        return
    if not len(stall.samples):
        return
    period_s = case.find("tick_period")
    tick = float(period_s.max) if period_s is not None and period_s.max else None
    throttle = throttle_ns(machine)
    traced = timer_entries is not None and begin is not None and kernel_period is not None
    late: list[tuple[int, int]] = []  # (stall length, timer spacing)
    ticked = throttled = 0
    for length, start in zip(stall.samples.tolist(), starts.samples.tolist(), strict=True):
        if traced:
            assert timer_entries is not None and begin is not None and kernel_period is not None
            lo = begin + start
            spacing = _late_timer(timer_entries, lo, lo + length, kernel_period)
            if spacing is not None:
                late.append((length, spacing))
                continue
            ticked += 1
        if throttle is not None and throttle / 2 <= length <= throttle + 2 * (tick or 0):
            throttled += 1
    parts = []
    if late and kernel_period is not None:
        length, spacing = max(late)
        parts.append(
            f"{len(late)} with the kernel's own timer late (local_timer_entry "
            f"{spacing / 1e6:.1f} ms after the one before, tick {kernel_period / 1e6:.3f} ms, "
            f"in a {length / 1e6:.1f} ms stall): the CPU was not running this kernel's code "
            "(a hypervisor not running the vCPU, or interrupts off), no thread of it is to blame"
        )
    if traced and ticked:
        parts.append(
            f"{ticked} the kernel ticked through: this kernel ran something else "
            "(RT throttling or a thread above the measuring one)"
        )
    thr = machine.get("rt_throttling") or {}
    if throttled:
        parts.append(
            f"{throttled} no longer than RT throttling's stop "
            f"({(throttle or 0) / 1e6:.0f} ms: sched_rt_runtime_us {thr.get('runtime_us')} < "
            f"sched_rt_period_us {thr.get('period_us')}): consistent with throttling"
        )
    elif throttle is None and thr:
        parts.append("not RT throttling (it is off: sched_rt_runtime_us >= the period or -1)")
    if not parts:
        return
    case.warnings.append(
        RunWarning("stall_cause", f"{len(stall.samples)} stalls: " + "; ".join(parts), case.case)
    )
