"""From a time-ordered stream of kernel events to durations: case windows,
interrupt handler and tick durations, wake-up latencies.

Pairing runs over the whole trace, not window by window, so a handler that
starts just before a case's end marker and ends after it is still one whole
handler. A pair then belongs to the window holding its start (entry, or
waking). What cannot be paired is counted, never guessed:

- an exit without its entry (the trace began inside the handler);
- an entry without its exit (the trace ended inside it, or events were lost);
- a wake-up of a task that was still running (it never left the CPU, so no
  switch-in follows and there is no latency to measure).

Interrupts nest per CPU (a handler interrupted by the local timer), so
entries are kept on a per-CPU stack and an exit closes the newest open entry
of the same kind and number; durations are inclusive (entry to exit, nested
handlers included), which is the time the interrupted task lost.
Wake-ups are followed across CPUs: the waking may happen on one CPU and the
switch-in on another (the task migrated, or was woken remotely).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from rtbench.trace.ringbuf import LOST, Event

_MARK = re.compile(r"rtbench (begin|end) (\S+)(?: seq=(\d+))?")


@dataclass
class Window:
    """One case as the agent marked it in the trace."""

    case: str
    begin: int
    end: int | None  # None: open to the end of the trace
    seq: int | None = None
    pid: int = -1  # the agent: the task that wrote the marker
    complete: bool = False  # closed by its own end marker (not cut short)

    def holds(self, ts: int) -> bool:
        return self.begin <= ts and (self.end is None or ts < self.end)


@dataclass(frozen=True)
class Interval:
    cpu: int
    start: int
    end: int
    label: str  # the irq's name, or "local_timer"

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Wakeup:
    pid: int
    comm: str
    woken: int  # sched_waking
    running: int  # the sched_switch that switched it in
    cpu: int  # where it was switched in
    waker_cpu: int

    @property
    def latency(self) -> int:
        return self.running - self.woken


@dataclass
class Pairing:
    windows: list[Window] = field(default_factory=list)
    irqs: list[Interval] = field(default_factory=list)
    timers: list[Interval] = field(default_factory=list)
    timer_entries: dict[int, list[int]] = field(default_factory=dict)  # cpu -> entry times
    wakeups: list[Wakeup] = field(default_factory=list)
    forks: list[tuple[int, int, int]] = field(default_factory=list)  # (ts, parent, child)
    unpaired: Counter[str] = field(default_factory=Counter)
    lost: int = 0  # events the kernel reported lost (-1 counted as 1: unknown)
    events: int = 0
    first_ts: int | None = None
    last_ts: int | None = None

    def agent_tasks(self, agent_pid: int) -> set[int]:
        """The agent and every task it (or one of its tasks) created."""
        tasks = {agent_pid}
        for _, parent, child in self.forks:  # in time order
            if parent in tasks:
                tasks.add(child)
        return tasks


@dataclass
class _Open:
    key: tuple[str, int]  # ("irq", irq number) or ("timer", vector)
    start: int
    label: str


class _Pairer:
    def __init__(self) -> None:
        self.out = Pairing()
        self.stacks: dict[int, list[_Open]] = {}
        self.pending: dict[int, tuple[int, int, str]] = {}  # pid -> (woken, waker cpu, comm)
        self.on_cpu: dict[int, int] = {}  # cpu -> pid switched in last
        self.open_window: Window | None = None

    def feed(self, e: Event) -> None:
        out = self.out
        out.events += 1
        if out.first_ts is None:
            out.first_ts = e.ts
        out.last_ts = e.ts
        handler = _HANDLERS.get(e.name)
        if handler is not None:
            handler(self, e)

    # -- markers

    def marker(self, e: Event) -> None:
        m = _MARK.match(str(e.fields.get("buf", "")))
        if m is None:
            return
        kind, case, seq = m.group(1), m.group(2), m.group(3)
        if kind == "begin":
            if self.open_window is not None:
                # A begin without its end: that case was cut short, and it
                # ends where the next one begins.
                self.open_window.end = e.ts
            w = Window(case, e.ts, None, int(seq) if seq else None, e.pid)
            self.out.windows.append(w)
            self.open_window = w
        elif self.open_window is not None and self.open_window.case == case:
            self.open_window.end = e.ts
            self.open_window.complete = True
            self.open_window = None
        else:
            self.out.unpaired["end marker without begin"] += 1

    # -- interrupts and the tick

    def enter(self, e: Event, key: tuple[str, int], label: str) -> None:
        self.stacks.setdefault(e.cpu, []).append(_Open(key, e.ts, label))

    def leave(self, e: Event, key: tuple[str, int], into: list[Interval]) -> None:
        stack = self.stacks.get(e.cpu, [])
        for i in range(len(stack) - 1, -1, -1):
            if stack[i].key == key:
                # Entries above the match lost their exits (lost events).
                for _ in stack[i + 1 :]:
                    self.out.unpaired[f"{key[0]} entry without exit"] += 1
                opened = stack[i]
                del stack[i:]
                into.append(Interval(e.cpu, opened.start, e.ts, opened.label))
                return
        self.out.unpaired[f"{key[0]} exit without entry"] += 1

    def irq_entry(self, e: Event) -> None:
        self.enter(e, ("irq", int(e.fields.get("irq", -1))), str(e.fields.get("name", "?")))

    def irq_exit(self, e: Event) -> None:
        self.leave(e, ("irq", int(e.fields.get("irq", -1))), self.out.irqs)

    def timer_entry(self, e: Event) -> None:
        self.out.timer_entries.setdefault(e.cpu, []).append(e.ts)
        self.enter(e, ("timer", int(e.fields.get("vector", -1))), "local_timer")

    def timer_exit(self, e: Event) -> None:
        self.leave(e, ("timer", int(e.fields.get("vector", -1))), self.out.timers)

    # -- the scheduler

    def waking(self, e: Event) -> None:
        pid = int(e.fields.get("pid", -1))
        if pid <= 0:
            return
        if pid in self.on_cpu.values():
            # Woken before it got off its CPU: no switch-in will follow.
            self.out.unpaired["wakeup of a running task"] += 1
            return
        # A second waking before the switch-in keeps the first: the task
        # has been waiting since then.
        self.pending.setdefault(pid, (e.ts, e.cpu, str(e.fields.get("comm", ""))))

    def switch(self, e: Event) -> None:
        prev = int(e.fields.get("prev_pid", -1))
        nxt = int(e.fields.get("next_pid", -1))
        if prev in self.pending:
            # It was running when woken (the trace did not know yet).
            del self.pending[prev]
            self.out.unpaired["wakeup of a running task"] += 1
        self.on_cpu[e.cpu] = nxt
        woken = self.pending.pop(nxt, None)
        if woken is not None and nxt > 0:
            ts, waker_cpu, comm = woken
            self.out.wakeups.append(Wakeup(nxt, comm, ts, e.ts, e.cpu, waker_cpu))

    def fork(self, e: Event) -> None:
        self.out.forks.append(
            (e.ts, int(e.fields.get("parent_pid", -1)), int(e.fields.get("child_pid", -1)))
        )

    # -- lost events: forget what was open on that CPU

    def lost(self, e: Event) -> None:
        count = int(e.fields.get("count", -1))
        if "damaged" not in e.fields:  # a damaged page is said by its own warning
            self.out.lost += count if count > 0 else 1
        for _ in self.stacks.pop(e.cpu, []):
            self.out.unpaired["entry dropped at lost events"] += 1
        self.on_cpu.pop(e.cpu, None)
        # A lost sched_switch could pair a waking with a much later switch-in.
        self.out.unpaired["wakeup dropped at lost events"] += len(self.pending)
        self.pending.clear()

    def finish(self) -> Pairing:
        for stack in self.stacks.values():
            for opened in stack:
                self.out.unpaired[f"{opened.key[0]} entry without exit"] += 1
        self.out.unpaired["wakeup without switch-in"] += len(self.pending)
        self.out.unpaired = Counter({k: v for k, v in self.out.unpaired.items() if v})
        return self.out


_HANDLERS = {
    "ftrace:print": _Pairer.marker,
    "irq:irq_handler_entry": _Pairer.irq_entry,
    "irq:irq_handler_exit": _Pairer.irq_exit,
    "irq_vectors:local_timer_entry": _Pairer.timer_entry,
    "irq_vectors:local_timer_exit": _Pairer.timer_exit,
    "sched:sched_waking": _Pairer.waking,
    "sched:sched_switch": _Pairer.switch,
    "sched:sched_process_fork": _Pairer.fork,
    LOST: _Pairer.lost,
}

# What each event's handler reads: only these fields are decoded.
FIELDS: dict[str, frozenset[str]] = {
    "ftrace:print": frozenset({"buf"}),
    "irq:irq_handler_entry": frozenset({"irq", "name"}),
    "irq:irq_handler_exit": frozenset({"irq"}),
    "irq_vectors:local_timer_entry": frozenset({"vector"}),
    "irq_vectors:local_timer_exit": frozenset({"vector"}),
    "sched:sched_waking": frozenset({"pid", "comm"}),
    "sched:sched_switch": frozenset({"prev_pid", "next_pid"}),
    "sched:sched_process_fork": frozenset({"parent_pid", "child_pid"}),
}


def pair(events: Iterable[Event]) -> Pairing:
    """One pass over events in time order (all CPUs merged)."""
    p = _Pairer()
    for e in events:
        p.feed(e)
    return p.finish()
