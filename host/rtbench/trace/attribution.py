"""The spike explained: what ran on the CPU between a late release's planned
time and the moment its task ran, from the kernel trace kept at `--break`
(docs/soak.md), as `rtla timerlat -a` does for its worst sample.

The agent marks the break in the trace (`rtbench break CASE cpu=N
latency=NS since=NS`, from the measuring task itself, which then stops
tracing), so the marker's event gives the CPU, the task's pid and, with
`since` (planned release to the marker, on the agent's clock), the planned
time in the trace clock. From there, on that CPU:

- the split: planned -> the task's `sched_waking` (the timer fired late:
  interrupts or preemption off, or a handler ran) and waking -> the
  `sched_switch` that ran it (woken, then kept waiting: a higher-priority
  thread, or a lower one in a non-preemptible section);
- what had the CPU meanwhile, each context's exclusive time: hardware
  interrupt handlers, the local timer, softirqs, and threads (name, pid,
  priority), a thread's time after the wake-up said apart;
- the trace excerpt: the events on that CPU in the window.

The result is a `Spike`; `spike_warning` makes it the case's `spike`
warning (stored with the run), whose first line is the headline and the
rest the breakdown and excerpt; `sections` gives renderers the same back
from any run, stored or not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rtbench.model import Run
from rtbench.model import Warning as RunWarning
from rtbench.reports.units import us
from rtbench.trace.formats import FormatError
from rtbench.trace.ringbuf import LOST, Event, RingBufferError
from rtbench.trace.tracefs import Capture

_BREAK = re.compile(r"rtbench break (\S+) cpu=(-?\d+) latency=(\d+) since=(\d+)")

# irq:softirq_entry's vec (kernel/softirq.c softirq_to_name).
SOFTIRQS = (
    "HI",
    "TIMER",
    "NET_TX",
    "NET_RX",
    "BLOCK",
    "IRQ_POLL",
    "TASKLET",
    "SCHED",
    "HRTIMER",
    "RCU",
)

# Before the planned time the excerpt shows this much, for context.
LEAD_NS = 200_000
# The release's timer interrupt entered this late (and at least this share
# of the latency): the CPU was not running this kernel's code, or had
# interrupts off. An on-time local timer enters within a few µs.
LATE_TIMER_NS = 50_000
LATE_TIMER_SHARE = 0.5
EXCERPT_LINES = 60


@dataclass(frozen=True)
class Task:
    comm: str
    pid: int
    prio: int | None  # the kernel's prio: 0..99 real-time (99 - rt priority), 100..139 normal

    @property
    def policy(self) -> str:
        if self.prio is None:
            return "priority unknown"
        if self.prio < 0:
            return "SCHED_DEADLINE"
        if self.prio < 100:
            return f"real-time priority {99 - self.prio}"
        return f"normal, nice {self.prio - 120}"

    def __str__(self) -> str:
        if self.pid == 0:
            return "idle (the CPU was idle)"
        return f"{self.comm} (pid {self.pid}, {self.policy})"


@dataclass
class Contributor:
    """One context that held the CPU inside the window."""

    kind: str  # "irq", "local_timer", "softirq", "thread"
    name: str
    ns: int = 0  # exclusive time inside the window
    after_wakeup_ns: int = 0  # of which after the task was woken
    count: int = 0  # entries (irq, softirq) or switches in, inside the window
    task: Task | None = None

    def describe(self) -> str:
        if self.task is not None:
            return f"thread {self.task}"
        if self.kind == "irq":
            return f"hardware interrupt {self.name}"
        if self.kind == "softirq":
            return f"softirq {self.name}"
        return "local timer interrupt"


@dataclass
class Spike:
    case: str
    cpu: int
    latency_ns: int  # as the agent measured it
    task: Task
    planned: int  # trace clock
    woken: int | None  # the task's sched_waking
    running: int | None  # the sched_switch that ran it
    marker: int
    timer_entry: int | None = None  # the first local_timer_entry at or after `planned`
    contributors: list[Contributor] = field(default_factory=list)
    excerpt: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def timer_ns(self) -> int | None:
        """Planned release to the wake-up (rtla's IRQ latency, roughly)."""
        return None if self.woken is None else self.woken - self.planned

    @property
    def wait_ns(self) -> int | None:
        """Wake-up to running (rtla's thread latency minus the IRQ part)."""
        if self.woken is None or self.running is None:
            return None
        return self.running - self.woken

    @property
    def timer_late_ns(self) -> int | None:
        """How late the release's timer interrupt entered, when that is most
        of the latency (the wake-up followed it): then no thread of this
        kernel delayed the release, the CPU was not running its code (a
        hypervisor not running the vCPU) or had interrupts off."""
        if self.timer_entry is None:
            return None
        late = self.timer_entry - self.planned
        if late < max(LATE_TIMER_NS, LATE_TIMER_SHARE * self.latency_ns):
            return None
        if self.woken is not None and self.woken < self.timer_entry:
            return None  # woken before the timer: it was not the timer's wake-up
        return late

    @property
    def culprit(self) -> Contributor | None:
        others = [c for c in self.contributors if c.task is None or c.task.pid != self.task.pid]
        return max(others, key=lambda c: c.ns, default=None)

    def headline(self) -> str:
        parts = [f"{_us(self.latency_ns)} on CPU {self.cpu}"]
        if self.timer_ns is not None:
            # <= 0: on time (the marker's own write makes the planned time
            # look a few µs late).
            late = self.timer_ns > 0
            parts.append(f"woken {_us(self.timer_ns)} late" if late else "woken on time")
        if self.wait_ns is not None:
            parts.append(f"then waited {_us(self.wait_ns)} to run")
        c = self.culprit
        timer_late = self.timer_late_ns
        if timer_late is not None:
            # No thread to blame: the timer interrupt itself could not enter.
            parts.append(
                f"the local timer interrupt entered {_us(timer_late)} late: the CPU was not "
                "running this kernel's code (a hypervisor not running the vCPU) or had "
                "interrupts off"
            )
        elif c is not None and c.ns > 0:
            held = f"{c.describe()} held the CPU {_us(c.ns)}"
            if c.task is not None and c.after_wakeup_ns:
                held += f" ({_us(c.after_wakeup_ns)} of it after the wake-up)"
            parts.append(held)
        return "spike " + "; ".join(parts)

    def lines(self) -> list[str]:
        """The headline, the breakdown and the excerpt, for a text report."""
        window = (self.running if self.running is not None else self.marker) - self.planned
        out = [self.headline()]
        out.append(
            f"  task {self.task} on CPU {self.cpu}; window {_us(window)} from the planned "
            "release to the task running; what had the CPU (exclusive time):"
        )
        for c in sorted(self.contributors, key=lambda c: -c.ns):
            if c.ns <= 0:
                continue
            share = f"{100 * c.ns / window:.0f}%" if window > 0 else "-"
            extra = f", {_us(c.after_wakeup_ns)} after the wake-up" if c.after_wakeup_ns else ""
            times = f", {c.count}x" if c.count > 1 else ""
            out.append(f"    {_us(c.ns):>12} {share:>4}  {c.describe()}{times}{extra}")
        out.extend(f"  note: {n}" for n in self.notes)
        if self.excerpt:
            out.append("  trace (µs from the planned release):")
            out.extend(f"    {line}" for line in self.excerpt)
        return out


def _us(ns: float) -> str:
    return us(ns, 1, unit=True)


# --- finding the break --------------------------------------------------------


def find_breaks(events: Sequence[Event]) -> list[tuple[int, Event, re.Match[str]]]:
    out = []
    for i, e in enumerate(events):
        if e.name == "ftrace:print":
            m = _BREAK.match(str(e.fields.get("buf", "")))
            if m is not None:
                out.append((i, e, m))
    return out


def attribute(events: Sequence[Event], preempt: str = "") -> list[Spike]:
    """A Spike for every break marker among `events` (all CPUs, in time
    order); `preempt`: the kernel's preemption model, for the notes."""
    comms = _comms(events)
    spikes = []
    for i, e, m in find_breaks(events):
        spikes.append(_explain(events, i, e, m, comms, preempt))
    return spikes


def _comms(events: Iterable[Event]) -> dict[int, Task]:
    """pid -> the last name and priority the trace gave it."""
    tasks: dict[int, Task] = {}
    for e in events:
        f = e.fields
        if e.name == "sched:sched_switch":
            for side in ("prev", "next"):
                pid = _int(f.get(f"{side}_pid"))
                if pid is not None:
                    tasks[pid] = Task(
                        str(f.get(f"{side}_comm", "?")), pid, _int(f.get(f"{side}_prio"))
                    )
        elif e.name == "sched:sched_waking":
            pid = _int(f.get("pid"))
            if pid is not None:
                tasks[pid] = Task(str(f.get("comm", "?")), pid, _int(f.get("prio")))
    return tasks


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _explain(
    events: Sequence[Event],
    at: int,
    marker: Event,
    m: re.Match[str],
    comms: dict[int, Task],
    preempt: str = "",
) -> Spike:
    case, cpu, latency, since = m[1], int(m[2]), int(m[3]), int(m[4])
    cpu = marker.cpu if marker.cpu >= 0 else cpu
    tid = marker.pid
    planned = marker.ts - since
    task = comms.get(tid, Task("?", tid, None))
    spike = Spike(case, cpu, latency, task, planned, None, None, marker.ts)
    # Its switch-in on this CPU (the last before the marker), and the last
    # waking of it (on any CPU) before that, over the excerpt's window: a
    # waking the excerpt shows is always found (a switch-in that is not
    # there, overwritten or lost, must not hide it).
    lo = _first_at(events, planned - LEAD_NS)
    for j in range(at - 1, lo - 1, -1):
        e = events[j]
        if e.name == "sched:sched_waking" and e.fields.get("pid") == tid:
            spike.woken = e.ts
            break
        if spike.running is None and (
            e.name == "sched:sched_switch" and e.cpu == cpu and e.fields.get("next_pid") == tid
        ):
            spike.running = e.ts
    for e in events[_first_at(events, planned) : at]:
        if e.cpu == cpu and e.name == "irq_vectors:local_timer_entry":
            spike.timer_entry = e.ts
            break
    if spike.woken is None:
        spike.notes.append(
            f"no sched_waking of the task (pid {tid}) in the trace from "
            f"{_us(LEAD_NS)} before the planned release: it may not have slept (an overrun), "
            "or the event was lost"
        )
    elif spike.woken < planned:
        spike.notes.append(
            f"the task was woken {_us(planned - spike.woken)} before the planned release: it "
            "was not asleep waiting for it (a late start, e.g. its first release, or an overrun)"
        )
    if spike.timer_late_ns is not None:
        spike.notes.append(
            "the time credited to whatever was current before the timer entered is time in "
            "which this kernel recorded no event on the CPU: no proof that it ran"
        )
    end = spike.running if spike.running is not None else marker.ts
    spike.contributors = _credit(events, at, cpu, planned, end, spike.woken, comms)
    losses = [e for e in events[lo:at] if e.name == LOST and e.cpu == cpu]
    for e in losses:
        if "damaged" in e.fields:  # a page cut at damage (ringbuf.read_pages)
            spike.notes.append(
                f"the kernel trace was damaged on this CPU in the window (cpu{cpu} page offset "
                f"{e.fields['damaged']}): the rest of that page is lost, times are partial"
            )
    if any("damaged" not in e.fields for e in losses):
        spike.notes.append("the kernel lost events on this CPU in the window: times are partial")
    spike.excerpt = _excerpt(events[lo : at + 1], cpu, tid, planned, comms)
    c = spike.culprit
    lower = c is not None and c.task is not None and _below(c.task, task)
    if c is not None and c.task is not None and lower and c.after_wakeup_ns > c.ns / 2:
        spike.notes.append(
            f"{c.task.comm} ran below the task's priority and still kept the CPU "
            f"{_us(c.after_wakeup_ns)} after the wake-up: it was in a section that could not be "
            "preempted (kernel code under "
            + (f"this kernel's {preempt}, " if preempt else "")
            + "a preemption model without full preemption, or preemption or interrupts off)"
        )
    return spike


def _below(a: Task, b: Task) -> bool:
    """a runs at a lower priority than b (kernel prio: higher is lower)."""
    return a.prio is not None and b.prio is not None and a.prio > b.prio


def _first_at(events: Sequence[Event], ts: int) -> int:
    lo, hi = 0, len(events)
    while lo < hi:
        mid = (lo + hi) // 2
        if events[mid].ts < ts:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _credit(
    events: Sequence[Event],
    at: int,
    cpu: int,
    start: int,
    end: int,
    woken: int | None,
    comms: dict[int, Task],
) -> list[Contributor]:
    """Exclusive time of each context on `cpu` within [start, end): the
    innermost open handler, else the current task. The state at `start`
    comes from the events before it on that CPU."""
    mine = [e for e in events[:at] if e.cpu == cpu]
    # From the last switch on the CPU before the window: who ran, and the
    # handlers opened since.
    first = 0
    for i in range(len(mine) - 1, -1, -1):
        if mine[i].ts <= start and mine[i].name == "sched:sched_switch":
            first = i
            break
    credits: dict[tuple[str, str, int], Contributor] = {}
    stack: list[tuple[str, str, object]] = []  # (kind, name, key)
    current: Task | None = None

    def who() -> Contributor:
        if stack:
            kind, name, _ = stack[-1]
            key = (kind, name, -1)
            if key not in credits:
                credits[key] = Contributor(kind, name)
            return credits[key]
        t = current or Task("?", -1, None)
        key = ("thread", t.comm, t.pid)
        if key not in credits:
            credits[key] = Contributor("thread", t.comm, task=t)
        return credits[key]

    def give(a: int, b: int) -> None:
        a, b = max(a, start), min(b, end)
        if b <= a:
            return
        c = who()
        c.ns += b - a
        if woken is not None and c.task is not None:
            c.after_wakeup_ns += max(0, b - max(a, woken))

    prev = mine[first].ts if mine else start
    for e in mine[first:]:
        # Any other event on the CPU names the task it interrupted or ran
        # in: the ground truth when a switch is missing (a flight
        # recorder overwrites its oldest pages, the switch into a
        # long-running hog among them).
        if (
            e.name != "sched:sched_switch"
            and e.pid >= 0
            and (current is None or current.pid != e.pid)
        ):
            current = comms.get(e.pid, Task("?", e.pid, None))
        give(prev, e.ts)
        prev = e.ts
        f = e.fields
        inside = start <= e.ts < end
        if e.name == "sched:sched_switch":
            nxt = _int(f.get("next_pid"))
            current = Task(
                str(f.get("next_comm", "?")),
                nxt if nxt is not None else -1,
                _int(f.get("next_prio")),
            )
            stack.clear()
            if inside:
                who().count += 1
        elif e.name in (
            "irq:irq_handler_entry",
            "irq:softirq_entry",
            "irq_vectors:local_timer_entry",
        ):
            kind, name, key = _context(e)
            stack.append((kind, name, key))
            if inside:
                who().count += 1
        elif e.name in ("irq:irq_handler_exit", "irq:softirq_exit", "irq_vectors:local_timer_exit"):
            key = _context(e)[2]
            for i in range(len(stack) - 1, -1, -1):
                if stack[i][2] == key:
                    del stack[i:]
                    break
        elif e.name == LOST:
            stack.clear()
            current = None  # the switches lost with the events are unknown
    give(prev, end)
    # A task's name and priority as the trace last gave them (a thread that
    # raised its own priority after it was switched in shows the raised one).
    for c in credits.values():
        if c.task is not None and c.task.pid > 0 and c.task.pid in comms:
            c.task = comms[c.task.pid]
            c.name = c.task.comm
    return sorted(credits.values(), key=lambda c: -c.ns)


def _context(e: Event) -> tuple[str, str, object]:
    f = e.fields
    if e.name.startswith("irq:irq_handler"):
        irq = f.get("irq", -1)
        name = str(f.get("name", "")) if e.name.endswith("entry") else ""
        return "irq", f"{irq} ({name})" if name else str(irq), ("irq", irq)
    if e.name.startswith("irq:softirq"):
        vec = _int(f.get("vec"))
        name = SOFTIRQS[vec] if vec is not None and 0 <= vec < len(SOFTIRQS) else str(vec)
        return "softirq", name, ("softirq", vec)
    return "local_timer", "local_timer", ("timer", f.get("vector", -1))


def _excerpt(
    events: Sequence[Event], cpu: int, tid: int, planned: int, comms: dict[int, Task]
) -> list[str]:
    lines = []
    for e in events:
        mine = e.cpu == cpu or (e.name == "sched:sched_waking" and e.fields.get("pid") == tid)
        if not mine:
            continue
        t = comms.get(e.pid)
        who = f"{t.comm if t else '?'}-{e.pid}"
        lines.append(
            f"{(e.ts - planned) / 1000:+10.1f} [{e.cpu:03d}] {who:>22} {e.name.split(':', 1)[-1]}: "
            + _fields(e)
        )
    if len(lines) > EXCERPT_LINES:
        # The start (what ran at the planned time, the wake-up) and the end
        # (the switch that ran the task).
        head, tail = EXCERPT_LINES // 3, EXCERPT_LINES - EXCERPT_LINES // 3
        cut = len(lines) - head - tail
        lines = [*lines[:head], f"... {cut} events left out", *lines[-tail:]]
    return lines


def _fields(e: Event) -> str:
    f = e.fields
    if e.name == "sched:sched_switch":
        return (
            f"{f.get('prev_comm')}:{f.get('prev_pid')} [{f.get('prev_prio')}] ==> "
            f"{f.get('next_comm')}:{f.get('next_pid')} [{f.get('next_prio')}]"
        )
    if e.name == "ftrace:print":
        return str(f.get("buf", "")).strip()
    keep = [k for k in f if not k.startswith("common_")]
    return " ".join(f"{k}={f[k]}" for k in keep)


# --- into the run ----------------------------------------------------------------


SPIKE = "spike"


def spike_warning(spike: Spike) -> RunWarning:
    return RunWarning(SPIKE, "\n".join(spike.lines()), spike.case)


def add_spikes(run: Run, events: Sequence[Event], preempt: str = "") -> list[Spike]:
    """Attributes each break in `events` and adds it to its case as a
    `spike` warning (or run-wide when the case is not in the run);
    `preempt` names the kernel's preemption model for the notes."""
    spikes = attribute(events, preempt)
    for s in spikes:
        w = spike_warning(s)
        case = run.case(s.case)
        (case.warnings if case is not None else run.warnings).append(w)
    return spikes


@dataclass(frozen=True)
class Section:
    """What a renderer shows of a spike: its case, one line, and the rest."""

    case: str | None
    headline: str
    lines: tuple[str, ...]


def sections(run: Run) -> list[Section]:
    """Every spike of a run, stored or fresh, for the reports."""
    out = []
    for w in run.all_warnings():
        if w.code == SPIKE:
            head, *rest = w.detail.split("\n")
            out.append(Section(w.case, head, tuple(rest)))
    return out


def explain_breaks(run: Run, capture: Capture) -> list[Spike]:
    """The flight recorder's capture: a `trace` warning saying what it
    holds, and each break explained. Never raises for bad trace data."""
    try:
        events = capture.events_in_order()
    except (RingBufferError, FormatError, OSError) as e:
        run.warnings.append(RunWarning("trace", f"the kernel trace could not be decoded: {e}"))
        return []
    span = (events[-1].ts - events[0].ts) / 1e6 if events else 0.0
    lost = sum(capture.overrun.values())
    run.warnings.append(
        RunWarning(
            "trace",
            f"flight recorder (--break): the kernel kept the last {span:.1f} ms of events "
            f"({len(events)} events, {capture.source}, trace_clock {capture.clock}"
            + (f"; {lost} older events overwritten" if lost else "")
            + "); no in-kernel split per case",
        )
    )
    for note in capture.notes:
        run.warnings.append(RunWarning("trace", note))
    if damage := capture.damage_warning():
        run.warnings.append(RunWarning("trace", damage))
    model = run.system.preempt + (
        f" ({run.system.preempt_mode})" if run.system.preempt_mode else ""
    )
    spikes = add_spikes(run, events, model)
    if not spikes and any(w.code == "break" for w in run.all_warnings()):
        run.warnings.append(
            RunWarning(
                "trace",
                "a case broke at --break, but its marker is not in the kernel trace "
                "(the agent could not write it, or it was overwritten)",
            )
        )
    return spikes
