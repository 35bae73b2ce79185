"""The in-kernel split of each case: kernel series, a `trace` warning, and
for CLK-DUR the cross-check of the tick against the kernel's own timer.

Series added to a case (nanoseconds, every sample kept, in time order):

- `kernel.local_timer`: local-timer interrupt durations (entry to exit) on
  the measurement CPU: the tick and every hrtimer expiry it handles;
- `kernel.irq`: hardware interrupt handler durations on the measurement CPU;
- `kernel.irq` at point {cpu, irq}: the same per CPU and per irq name, every
  CPU;
- `kernel.wakeup`: wake-up to switch-in latency of the agent's own tasks
  (any CPU; they run pinned to the measurement CPU);
- `kernel.wakeup_cpu`: the same for every task switched in on the
  measurement CPU (what else the kernel ran there).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from rtbench.analysis import stalls
from rtbench.model import CaseResult, Check, Point, Run, Series
from rtbench.model import Warning as RunWarning
from rtbench.reports.units import us
from rtbench.trace.formats import FormatError
from rtbench.trace.noise import name_noise
from rtbench.trace.pairing import FIELDS, Interval, Pairing, Wakeup, Window, pair
from rtbench.trace.ringbuf import RingBufferError
from rtbench.trace.tracefs import Capture

# CLK-DUR's detected tick period and the kernel's local-timer spacing agree
# when they differ by at most this fraction of the kernel's period. Both
# clocks are the same hardware counter, so the real disagreement is the
# detection's own spread (one 250 Hz tick is 4 ms; 5% is 200 µs).
TICK_TOLERANCE = 0.05
CLK_DUR = "CLK-DUR"


def kernel_series(
    case: str, name: str, values: Iterable[int], point: Point | None = None, kind: str = "latency"
) -> Series:
    """A series read from the kernel trace. Handler run times are durations
    (rtbench.kinds): what the case measured is rated, not the trace's view."""
    samples = np.fromiter(values, dtype=np.int64)
    n = len(samples)
    return Series(
        case=case,
        name=name,
        point=dict(point or {}),
        unit="ns",
        samples=samples,
        n=n,
        min=int(samples.min()) if n else None,
        max=int(samples.max()) if n else None,
        sum=int(samples.sum()) if n else 0,
        kind=kind,
    )


@dataclass
class _Index:
    """Intervals sorted by start, for the slice inside a window."""

    starts: list[int]
    items: list[Interval]

    @classmethod
    def of(cls, items: list[Interval]) -> _Index:
        items = sorted(items, key=lambda i: (i.start, i.cpu))
        return cls([i.start for i in items], items)

    def within(self, w: Window, keep: Callable[[Interval], bool]) -> list[Interval]:
        lo = bisect.bisect_left(self.starts, w.begin)
        hi = len(self.starts) if w.end is None else bisect.bisect_left(self.starts, w.end)
        return [i for i in self.items[lo:hi] if keep(i)]


def _wakeups_within(wakeups: list[Wakeup], w: Window) -> list[Wakeup]:
    return [x for x in wakeups if w.holds(x.woken)]


def _short_events(names: list[str]) -> str:
    """'irq:irq_handler_entry', 'irq:irq_handler_exit' -> 'irq_handler_entry/exit'."""
    short = [n.split(":", 1)[-1] for n in names]
    out: list[str] = []
    for n in short:
        if n.endswith("_exit") and n[: -len("exit")] + "entry" in short:
            continue
        if n.endswith("_entry") and n[: -len("entry")] + "exit" in short:
            n += "/exit"
        out.append(n)
    return ", ".join(out)


def _describe(capture: Capture, cpu: int) -> str:
    return (
        f"kernel events from tracefs ({capture.source}; trace_clock {capture.clock}, "
        f"ns time stamps from the binary ring buffer): {_short_events(capture.events)}; "
        f"irq and local_timer on the measurement CPU {cpu}"
    )


def _match(run: Run, windows: list[Window]) -> list[tuple[CaseResult, Window]]:
    """The n-th window of a case ID is the n-th result of that ID."""
    seen: dict[str, int] = {}
    out: list[tuple[CaseResult, Window]] = []
    for w in windows:
        k = seen.get(w.case, 0)
        seen[w.case] = k + 1
        same = [c for c in run.cases if c.case == w.case]
        if k < len(same):
            out.append((same[k], w))
    return out


def add_kernel_split(run: Run, capture: Capture) -> Pairing | None:
    """Decodes `capture` and adds the kernel series, warnings and checks to
    `run`'s cases. Never raises for bad trace data: that becomes a warning."""
    cpu = run.hello.get("params", {}).get("cpu")
    if not isinstance(cpu, int):
        run.warnings.append(RunWarning("trace", "the run has no measurement CPU (no hello)"))
        return None
    try:
        pairing = pair(capture.events_in_order(FIELDS))
    except (RingBufferError, FormatError, OSError) as e:
        run.warnings.append(RunWarning("trace", f"the kernel trace could not be decoded: {e}"))
        return None
    split_cases(run, pairing, capture, cpu)
    name_noise(run, capture)
    return pairing


def split_cases(run: Run, pairing: Pairing, capture: Capture, cpu: int) -> None:
    """The kernel series of each case from paired events; `capture` only
    describes the recording (events, clock, losses)."""
    _run_warnings(run, capture, pairing)
    matched = _match(run, pairing.windows)
    if not matched:
        run.warnings.append(
            RunWarning(
                "trace",
                f"{pairing.events} kernel events recorded but no case markers among them: "
                "the agent could not write to the trace marker",
            )
        )
        return
    irqs, timers = _Index.of(pairing.irqs), _Index.of(pairing.timers)
    timer_entries = sorted(pairing.timer_entries.get(cpu, []))
    have = set(capture.events)
    for case, w in matched:
        if case.outcome == "unsupported":
            continue
        agent = pairing.agent_tasks(w.pid)
        add: list[Series] = []
        if {"irq_vectors:local_timer_entry", "irq_vectors:local_timer_exit"} <= have:
            ticks = timers.within(w, lambda i: i.cpu == cpu)
            durations = (i.duration for i in ticks)
            add.append(kernel_series(case.case, "kernel.local_timer", durations, kind="duration"))
        if {"irq:irq_handler_entry", "irq:irq_handler_exit"} <= have:
            inside = irqs.within(w, lambda i: True)
            add.append(
                kernel_series(
                    case.case,
                    "kernel.irq",
                    (i.duration for i in inside if i.cpu == cpu),
                    kind="duration",
                )
            )
            for c, label in sorted({(i.cpu, i.label) for i in inside}):
                add.append(
                    kernel_series(
                        case.case,
                        "kernel.irq",
                        (i.duration for i in inside if i.cpu == c and i.label == label),
                        {"cpu": c, "irq": label},
                        kind="duration",
                    )
                )
        if {"sched:sched_waking", "sched:sched_switch"} <= have:
            wakes = _wakeups_within(pairing.wakeups, w)
            add.append(
                kernel_series(
                    case.case, "kernel.wakeup", (x.latency for x in wakes if x.pid in agent)
                )
            )
            add.append(
                kernel_series(
                    case.case, "kernel.wakeup_cpu", (x.latency for x in wakes if x.cpu == cpu)
                )
            )
        case.series.extend(add)
        span = ((w.end if w.end is not None else pairing.last_ts or w.begin) - w.begin) / 1e6
        detail = f"{_describe(capture, cpu)}; window {span:.1f} ms"
        if not w.complete:
            detail += " (no end marker: the case was cut short)"
        case.warnings.append(RunWarning("trace", detail, case.case))
        if case.case == CLK_DUR:
            check, why = tick_cross_check(case, w, timers, timer_entries, cpu)
            kernel_period = _kernel_period(timer_entries, w)
            stalls.explain(case, run.machine, timer_entries, w.begin, kernel_period)
            if check is not None:
                case.checks.append(check)
                if check.verdict == "fail" and case.outcome == "passed":
                    case.outcome = "failed"
            else:
                case.warnings.append(RunWarning("trace", f"no tick cross-check: {why}", case.case))


def _run_warnings(run: Run, capture: Capture, pairing: Pairing) -> None:
    if capture.missing:
        run.warnings.append(
            RunWarning(
                "trace",
                "kernel events missing on this kernel: "
                + ", ".join(capture.missing)
                + " (their series are left out)",
            )
        )
    lost = pairing.lost + sum(capture.overrun.values())
    if lost:
        run.warnings.append(
            RunWarning(
                "trace",
                f"the kernel dropped about {lost} trace events (buffer full): "
                "handlers cut by the loss are left out",
            )
        )
    for note in capture.notes:
        run.warnings.append(RunWarning("trace", note))
    if damage := capture.damage_warning():
        run.warnings.append(RunWarning("trace", damage))
    # At each end of the trace a CPU may be inside a handler, and a task may
    # be woken and not yet run: a few of those are normal, not worth a word.
    edges = 2 * max(1, len(capture.cpus))
    odd = {
        k: v
        for k, v in pairing.unpaired.items()
        if not k.startswith(("wakeup of a running", "wakeup without switch-in")) and v > edges
    }
    if odd:
        run.warnings.append(
            RunWarning(
                "trace",
                "kernel events left unpaired: "
                + ", ".join(f"{v} {k}" for k, v in sorted(odd.items())),
            )
        )


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _us(ns: float) -> str:
    return us(ns, 1, unit=True)


def tick_cross_check(
    case: CaseResult,
    w: Window,
    timers: _Index,
    timer_entries: list[int],
    cpu: int,
) -> tuple[Check | None, str]:
    """CLK-DUR's tick period and gap against the kernel's local-timer
    spacing and duration on the measurement CPU, inside CLK-DUR's window.

    The kernel's period is the median spacing of local_timer_entry: the
    median, because the same interrupt also serves other hrtimers (a sleep
    that ends) and those split a few tick intervals."""
    period_s, gap_s = case.find("tick_period"), case.find("tick")
    if period_s is None or period_s.mean is None:
        return None, "CLK-DUR reported no tick period"
    lo = bisect.bisect_left(timer_entries, w.begin)
    hi = len(timer_entries) if w.end is None else bisect.bisect_left(timer_entries, w.end)
    entries = timer_entries[lo:hi]
    if len(entries) < 3:
        return None, (
            f"only {len(entries)} local_timer interrupts on CPU {cpu} during CLK-DUR "
            "(tick stopped, or the events are missing)"
        )
    kernel_period = float(np.median(np.diff(np.asarray(entries, dtype=np.int64))))
    durations = [i.duration for i in timers.within(w, lambda i: i.cpu == cpu)]
    kernel_mean = sum(durations) / len(durations) if durations else None
    agent_period = period_s.mean
    agent_gap = gap_s.mean if gap_s is not None else None
    ok = _agree(agent_period, kernel_period)
    detail = (
        f"agent: {_ms(agent_period)}"
        + (f", mean gap {_us(agent_gap)}" if agent_gap is not None else "")
        + f"; kernel: {_ms(kernel_period)}"
        + (f", mean local_timer {_us(kernel_mean)}" if kernel_mean is not None else "")
        + f" ({len(entries)} local_timer interrupts on CPU {cpu}; the periods must agree "
        + f"within {TICK_TOLERANCE:.0%})"
        + _durations(gap_s, durations)
    )
    if not ok:
        # CLK-DUR reports other recurring gap sources apart (under a
        # hypervisor, the host's timer). Timing alone cannot tell which is
        # the tick; the trace can. CLK-DUR saw the kernel's tick if one of
        # its recurring sources has the kernel's period.
        for s in case.series:
            # The period is an attribute (older streams: the point).
            period = (
                s.attrs.get("period_ns", s.point.get("period_ns"))
                if s.name == "recurring"
                else None
            )
            if isinstance(period, int) and _agree(period, kernel_period):
                mean = f", mean gap {_us(s.mean)}" if s.mean is not None else ""
                detail += (
                    f"; the kernel's tick is CLK-DUR's other recurring source, {_ms(period)}{mean}"
                    f" (the {_ms(agent_period)} source is another timer, e.g. the hypervisor's)"
                )
                case.warnings.append(
                    RunWarning(
                        "tick_source",
                        f"the trace shows the kernel tick at {_ms(period)}, not CLK-DUR's "
                        f"most frequent gap source ({_ms(agent_period)})",
                        case.case,
                    )
                )
                ok = True
                break
    return Check(case.case, "trace_tick_period", "pass" if ok else "fail", detail), ""


def _kernel_period(timer_entries: list[int], w: Window) -> float | None:
    lo = bisect.bisect_left(timer_entries, w.begin)
    hi = len(timer_entries) if w.end is None else bisect.bisect_left(timer_entries, w.end)
    if hi - lo < 3:
        return None
    return float(np.median(np.diff(np.asarray(timer_entries[lo:hi], dtype=np.int64))))


def _durations(gap: Series | None, handler: list[int]) -> str:
    """The tick's gap against the kernel's own handler time: a gap holds the
    handler, plus interrupt entry and exit and whatever no kernel event
    covers (under a hypervisor, its own exits)."""
    if gap is None or not handler or gap.n == 0:
        return ""
    g = float(np.median(gap.samples)) if gap.samples is not None and len(gap.samples) else gap.mean
    h = float(np.median(np.asarray(handler, dtype=np.int64)))
    if g is None or h <= 0:
        return ""
    return (
        f"; durations: median tick gap {_us(g)}, median local_timer {_us(h)}, "
        f"gap/handler {g / h:.1f}x ({_us(max(g - h, 0.0))} a tick covered by no kernel "
        "event: interrupt entry and exit, a hypervisor)"
    )


def _agree(agent_period: float, kernel_period: float) -> bool:
    return abs(agent_period - kernel_period) <= TICK_TOLERANCE * kernel_period
