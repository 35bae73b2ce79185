"""NOISE-OS's gaps named from the kernel trace (rtbench.trace.noise), by
known answers on hand-made timelines: the poller (pid 50) marks its start
on CPU 1 at 1000 µs; each of its gaps is then named after what the trace
shows holding that CPU for at least half of it (a thread, a hardware
interrupt, a softirq), and a gap with nothing else in the trace is
unattributed/hardware. A gap placed where the trace has nothing, while a
thread runs just after it, must not be blamed on that thread."""

from __future__ import annotations

import numpy as np

from rtbench.model import CaseResult, Run, Series
from rtbench.trace.noise import CODE, UNATTRIBUTED, add_noise_sources, describe, name_gaps
from rtbench.trace.ringbuf import Event

US = 1000
POLLER, HOG = 50, 60
START = 1000 * US


def ev(ts: int, event: str, current: int, cpu: int = 1, **fields: int | str) -> Event:
    return Event(ts, cpu, event, current, dict(fields))


def switch(ts: int, prev: tuple[str, int, int], nxt: tuple[str, int, int]) -> Event:
    return ev(
        ts, "sched:sched_switch", prev[1], prev_comm=prev[0], prev_pid=prev[1],
        prev_prio=prev[2], prev_state="R", next_comm=nxt[0], next_pid=nxt[1], next_prio=nxt[2],
    )  # fmt: skip


P, H = ("noise-os", POLLER, 19), ("rtb-hog", HOG, 4)


def timeline() -> list[Event]:
    """Gaps (since the start): 100 µs, a hog 300 µs; 1000 µs, an irq 40 µs;
    2000 µs, a softirq 30 µs; 3000 µs, nothing in the trace 50 µs; 4000 µs,
    the hog again, but only after a 60 µs gap with nothing in it."""
    t = START
    return [
        switch(500 * US, ("swapper/1", 0, 120), P),
        ev(START, "ftrace:print", POLLER, buf="rtbench begin NOISE-OS seq=1\n", cpu=0),
        ev(START, "ftrace:print", POLLER, buf="rtbench noise-os cpu=1\n"),
        switch(t + 101 * US, P, H),
        switch(t + 399 * US, H, P),
        ev(t + 1001 * US, "irq:irq_handler_entry", POLLER, irq=24, name="eth0"),
        ev(t + 1039 * US, "irq:irq_handler_exit", POLLER, irq=24, ret=1),
        ev(t + 2001 * US, "irq:softirq_entry", POLLER, vec=1),
        ev(t + 2029 * US, "irq:softirq_exit", POLLER, vec=1),
        switch(t + 4070 * US, P, H),
        switch(t + 4090 * US, H, P),
        ev(t + 9000 * US, "ftrace:print", POLLER, buf="rtbench end NOISE-OS\n", cpu=0),
    ]


GAPS = [(100 * US, 300 * US), (1000 * US, 40 * US), (2000 * US, 30 * US), (3000 * US, 50 * US),
        (4000 * US, 60 * US)]  # fmt: skip


def test_each_gap_is_named_after_what_held_the_cpu() -> None:
    events = timeline()
    start = events[2]
    named = name_gaps(events, start, GAPS)
    assert [(g.at_ns, g.ns) for g in named] == GAPS
    assert all(g.cpu == 1 for g in named)
    hog, irq, softirq, bare, before = named
    assert hog.source == f"thread rtb-hog (pid {HOG}, real-time priority 95)"
    assert 290 * US <= hog.held_ns <= 300 * US
    assert irq.source == "hardware interrupt 24 (eth0)" and irq.held_ns == 38 * US
    assert softirq.source == "softirq TIMER" and softirq.held_ns == 28 * US
    assert bare.source == UNATTRIBUTED and bare.held_ns == 0
    # The hog ran 20 µs at the end of a 60 µs gap: less than half of it.
    assert before.source == UNATTRIBUTED
    assert bare.part == "" and before.part == ""  # nothing traced in them: no part
    # A gap the hog held 20 µs of 60 (4050-4110 µs): unattributed, with the
    # hog named as its largest traced part.
    (part,) = name_gaps(events, start, [(4050 * US, 60 * US)])
    assert part.source == UNATTRIBUTED and part.held_ns == 0
    assert part.part == f"thread rtb-hog (pid {HOG}, real-time priority 95)"
    assert part.part_ns == 20 * US
    assert "rtb-hog (pid 60, real-time priority 95) held 20.0 µs of it" in describe([part], 1)


def _case() -> CaseResult:
    def series(name: str, values: list[int], kind: str) -> Series:
        a = np.array(values, dtype=np.int64)
        return Series("NOISE-OS", name, {}, "ns", a, n=len(a), min=int(a.min()),
                      max=int(a.max()), sum=int(a.sum()), kind=kind)  # fmt: skip

    at, ns = [g[0] for g in GAPS], [g[1] for g in GAPS]
    return CaseResult(
        "NOISE-OS", "passed",
        series=[series("noise", ns, "latency"), series("noise_at", at, "timestamp")],
    )  # fmt: skip


def test_the_case_gets_one_warning_per_cpu_largest_first() -> None:
    run = Run(hello={}, cases=[_case()])
    add_noise_sources(run, timeline())
    [w] = [w for w in run.cases[0].warnings if w.code == CODE]
    head, *lines = w.detail.split("\n")
    assert head.startswith("the 5 largest gaps on CPU 1, named from the kernel trace: 2x ")
    assert len(lines) == 5 and "rtb-hog" in lines[0] and "300.0 µs" in lines[0]
    assert "unattributed/hardware" in lines[1]  # the 60 µs gap, second largest
    # Without the poller's start marker nothing is named (no guess).
    bare = Run(hello={}, cases=[_case()])
    add_noise_sources(bare, [e for e in timeline() if "noise-os" not in str(e.fields.get("buf"))])
    assert not [w for w in bare.cases[0].warnings if w.code == CODE]
