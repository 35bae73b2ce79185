"""NOISE-OS's gaps named from the kernel trace (`rtbench run --trace`), as
rtla osnoise names its noise per source.

Each polling thread marks in the trace where it starts (`rtbench noise-os
cpu=N`, from the thread itself, just before it reads its first timestamp),
so a gap `noise_at` ns after that start is, in trace time, the marker's
time plus `noise_at`. What held that CPU meanwhile is the same exclusive-
time account as a --break spike's (attribution._credit): the interrupt
handlers, softirqs, the local timer and the threads other than the poller.
A gap is named after the context that held the CPU for at least half of
it; a gap in which the trace shows nothing else on the CPU (the poller
"held" it throughout) is `unattributed/hardware`: the kernel recorded no
event, so the CPU was taken by something below it (firmware, SMI, a
hypervisor not running the vCPU) or by an untraced context. An
unattributed gap still says which traced context held the largest part of
it, if any did: a thread's 20 ms inside a 50 ms stall of the vCPU is named
there, not lost.

The result is one `noise_source` warning per CPU on the case (stored with
the run), its first line a summary and then one line per gap, largest
first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rtbench.model import CaseResult, Run
from rtbench.model import Warning as RunWarning
from rtbench.trace.attribution import _comms, _credit, _first_at
from rtbench.trace.formats import FormatError
from rtbench.trace.ringbuf import Event, RingBufferError
from rtbench.trace.tracefs import Capture

CASE = "NOISE-OS"
CODE = "noise_source"
UNATTRIBUTED = "unattributed/hardware"
# The largest gaps of each CPU that are named: the long tail is what a
# reader asks about, and each costs a pass over that CPU's events.
TOP = 10
_START = re.compile(r"rtbench noise-os cpu=(-?\d+)")
_MARK = re.compile(r"rtbench (begin|end) (\S+)")


@dataclass(frozen=True)
class NamedGap:
    cpu: int
    at_ns: int  # since the poller started
    ns: int
    source: str  # a Contributor's description, or UNATTRIBUTED
    held_ns: int  # how much of the gap the source held (0: unattributed)
    # An unattributed gap's largest traced part (less than half of it).
    part: str = ""
    part_ns: int = 0


def name_gaps(
    events: Sequence[Event], start: Event, gaps: Sequence[tuple[int, int]]
) -> list[NamedGap]:
    """Names each (at_ns, ns) gap of the poller whose start marker is
    `start` (its CPU and pid come from the marker's event)."""
    m = _START.match(str(start.fields.get("buf", "")))
    cpu = start.cpu if start.cpu >= 0 or m is None else int(m[1])
    comms = _comms(events)
    out = []
    for at, ns in gaps:
        lo = start.ts + at
        hi = lo + ns
        credits = _credit(events, _first_at(events, hi), cpu, lo, hi, None, comms)
        others = [
            c
            for c in credits
            if c.ns > 0 and not (c.task is not None and c.task.pid in (start.pid, -1))
        ]
        best = max(others, key=lambda c: c.ns, default=None)
        if best is None:
            out.append(NamedGap(cpu, at, ns, UNATTRIBUTED, 0))
        elif 2 * best.ns < ns:
            out.append(NamedGap(cpu, at, ns, UNATTRIBUTED, 0, best.describe(), best.ns))
        else:
            out.append(NamedGap(cpu, at, ns, best.describe(), best.ns))
    return out


def _starts(events: Sequence[Event]) -> list[list[Event]]:
    """The pollers' start markers of each NOISE-OS case, in run order."""
    per_case: list[list[Event]] = []
    inside = False
    for e in events:
        if e.name != "ftrace:print":
            continue
        buf = str(e.fields.get("buf", ""))
        mark = _MARK.match(buf)
        if mark is not None and mark[2] == CASE:
            inside = mark[1] == "begin"
            if inside:
                per_case.append([])
        elif inside and _START.match(buf):
            per_case[-1].append(e)
    return per_case


def _gaps(case: CaseResult, cpu: int | None) -> list[tuple[int, int]]:
    """(at_ns, ns) of the case's gaps on `cpu` (None: a one-CPU run)."""

    def one(name: str) -> list[int]:
        for s in case.series:
            if s.name == name and s.point.get("cpu") == cpu and s.samples is not None:
                return [int(v) for v in s.samples]
        return []

    noise, at = one("noise"), one("noise_at")
    return list(zip(at, noise, strict=False))


def add_noise_sources(run: Run, events: Sequence[Event]) -> None:
    """A `noise_source` warning per CPU of every NOISE-OS case whose poller
    marked its start in `events`."""
    cases = [c for c in run.cases if c.case == CASE and c.outcome != "unsupported"]
    for case, starts in zip(cases, _starts(events), strict=False):
        # The trace split adds kernel series with a cpu point: only the
        # case's own say whether it measured per CPU.
        multi = any("cpu" in s.point for s in case.series if s.name == "noise")
        for start in starts:
            m = _START.match(str(start.fields.get("buf", "")))
            cpu = int(m[1]) if m is not None else start.cpu
            gaps = sorted(_gaps(case, cpu if multi else None), key=lambda g: -g[1])[:TOP]
            if not gaps:
                continue
            named = name_gaps(events, start, gaps)
            case.warnings.append(RunWarning(CODE, describe(named, cpu), case.case))


def describe(named: Sequence[NamedGap], cpu: int) -> str:
    sources: dict[str, int] = {}
    for g in named:
        sources[g.source] = sources.get(g.source, 0) + 1
    summary = ", ".join(f"{n}x {s}" for s, n in sorted(sources.items(), key=lambda x: -x[1]))
    lines = [f"the {len(named)} largest gaps on CPU {cpu}, named from the kernel trace: {summary}"]
    for g in named:
        held = f" (held {g.held_ns / 1000:.1f} µs of it)" if g.held_ns else ""
        if g.part:
            held = f" for most of it; {g.part} held {g.part_ns / 1000:.1f} µs of it"
        lines.append(
            f"  {g.ns / 1000:10.1f} µs at {g.at_ns / 1e6:9.3f} ms on CPU {g.cpu}: {g.source}{held}"
        )
    return "\n".join(lines)


def name_noise(run: Run, capture: Capture) -> None:
    """The capture's events decoded once more in full (comm names, softirq
    vectors), only when the run has NOISE-OS gaps to name."""
    if not any(c.case == CASE and c.find("noise") is not None for c in run.cases):
        return
    try:
        events = capture.events_in_order()
    except (RingBufferError, FormatError, OSError) as e:
        run.warnings.append(RunWarning("trace", f"NOISE-OS's gaps could not be named: {e}"))
        return
    add_noise_sources(run, events)
