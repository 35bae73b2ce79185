"""The kernel-trace mode: the ring-buffer reader, the pairing of events, the
per-case split, the CLK-DUR cross-check, and (root only) the recorder on the
real tracefs, including that every setting it changes comes back.

The reader is checked on a real trace recorded on a Linux machine
(data/trace-sample, made by data/make_trace_sample.py) against an oracle
independent of it: the kernel's own text rendering of the same buffer,
whose microsecond times must equal the decoded nanoseconds, rounded.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar, cast

import numpy as np
import pytest

from rtbench.analysis import stalls
from rtbench.model import CaseResult, Run, Series
from rtbench.trace import Recorder, finish, snapshot
from rtbench.trace import tracefs as tracefs_mod
from rtbench.trace.attribution import explain_breaks
from rtbench.trace.formats import (
    FormatError,
    check_header_event,
    decode,
    parse_format,
    parse_header_page,
)
from rtbench.trace.pairing import FIELDS, pair
from rtbench.trace.ringbuf import LOST, Damage, Event, RingBufferError, Spec, parse_page, read_pages
from rtbench.trace.split import TICK_TOLERANCE, add_kernel_split, split_cases
from rtbench.trace.tracefs import EVENTS, TRACEFS, Capture, TraceJournal, is_mounted, toplevel_lock

SAMPLE = Path(__file__).resolve().parent / "data" / "trace-sample"
MS = 1_000_000


# --- the recorded sample against the kernel's own text --------------------------

_LINE = re.compile(
    r"^\s*(?P<task>.*)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+"
    r"(?P<s>\d+)\.(?P<us>\d{6}):\s+(?P<event>\w+):"
)


def text_events(text: str) -> dict[int, list[tuple[int, str, int]]]:
    """The `trace` file: per CPU, (µs, event name, pid) in order."""
    out: dict[int, list[tuple[int, str, int]]] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            us = int(m["s"]) * 1_000_000 + int(m["us"])
            out.setdefault(int(m["cpu"]), []).append((us, m["event"], int(m["pid"])))
    return out


def raw_events(capture: Capture) -> dict[int, list[tuple[int, str, int]]]:
    """The same from the binary pages, rounded to µs as the kernel prints
    (ns2usecs: (ns + 500) / 1000)."""
    out: dict[int, list[tuple[int, str, int]]] = {}
    for e in capture.events_in_order():
        name = "tracing_mark_write" if e.name == "ftrace:print" else e.name.split(":")[1]
        out.setdefault(e.cpu, []).append(((e.ts + 500) // 1000, name, e.pid))
    return out


def assert_matches_text(capture: Capture, text: str, at_least: int = 100) -> None:
    oracle, decoded = text_events(text), raw_events(capture)
    assert sum(map(len, oracle.values())) >= at_least, "too few events to say anything"
    assert decoded == oracle
    m = re.search(r"entries-in-buffer/entries-written: (\d+)/(\d+)", text)
    assert m and int(m[1]) == sum(map(len, decoded.values()))


@pytest.fixture(scope="module")
def sample() -> Capture:
    return Capture.load(SAMPLE)


def test_sample_times_equal_the_kernels_text_rounded(sample: Capture) -> None:
    with gzip.open(SAMPLE / "trace.txt.gz", "rt") as f:
        assert_matches_text(sample, f.read())


def test_sample_is_nanoseconds_not_microseconds(sample: Capture) -> None:
    # Were the decoder reading a µs clock, every time would end in 000.
    ts = [e.ts for e in sample.events_in_order()]
    assert sum(t % 1000 != 0 for t in ts) > 0.9 * len(ts)
    assert ts == sorted(ts)


def test_sample_fields(sample: Capture) -> None:
    events = sample.events_in_order()
    names = Counter(e.name for e in events)
    assert names["ftrace:print"] == 4
    assert names["sched:sched_switch"] > 0 and names["irq_vectors:local_timer_entry"] > 0
    marks = [e.fields["buf"] for e in events if e.name == "ftrace:print"]
    assert marks == [
        "rtbench begin FIX-A seq=1\n",
        "rtbench end FIX-A\n",
        "rtbench begin FIX-B seq=2\n",
        "rtbench end FIX-B\n",
    ]
    sw = next(e for e in events if e.name == "sched:sched_switch")
    assert {"prev_comm", "prev_pid", "prev_state", "next_comm", "next_pid"} <= set(sw.fields)
    irq = [e for e in events if e.name == "irq:irq_handler_entry"]
    # __data_loc strings (the irq's name) decode to text
    assert all(isinstance(e.fields["name"], str) and e.fields["name"] for e in irq)


def test_sample_pairs_and_windows(sample: Capture) -> None:
    events = sample.events_in_order(FIELDS)
    p = pair(events)
    assert [(w.case, w.seq, w.complete) for w in p.windows] == [
        ("FIX-A", 1, True),
        ("FIX-B", 2, True),
    ]
    marker_pid = next(e.pid for e in events if e.name == "ftrace:print")
    assert all(w.pid == marker_pid for w in p.windows)
    # conservation: every local-timer entry is paired or counted
    entries = sum(1 for e in events if e.name == "irq_vectors:local_timer_entry")
    assert entries == len(p.timers) + p.unpaired["timer entry without exit"]
    assert all(0 < i.duration < 10 * MS for i in p.timers + p.irqs)
    # the ping-pong partner thread was forked by the marker writer
    tasks = p.agent_tasks(marker_pid)
    assert len(tasks) >= 2
    assert any(w.pid in tasks and w.pid != marker_pid for w in p.wakeups)


def test_sample_split_into_cases(sample: Capture) -> None:
    run = Run(
        hello={"params": {"cpu": 0}},
        cases=[CaseResult("FIX-A", outcome="passed"), CaseResult("FIX-B", outcome="passed")],
    )
    add_kernel_split(run, sample)
    for case in run.cases:
        names = {s.label for s in case.series}
        assert {"kernel.local_timer", "kernel.irq", "kernel.wakeup", "kernel.wakeup_cpu"} <= names
        assert case.find("kernel.wakeup") is not None
        for s in case.series:
            assert s.samples is not None and s.samples.dtype == np.int64
            assert s.n == len(s.samples) and s.sum == int(s.samples.sum())
        (w,) = [w for w in case.warnings if w.code == "trace"]
        assert "mono_raw" in w.detail and "sched_waking" in w.detail
    fix_a = run.case("FIX-A")
    assert fix_a is not None
    wakeups = fix_a.find("kernel.wakeup")
    assert wakeups is not None and wakeups.n > 0


# --- the ring-buffer format, by known answers -----------------------------------

HEADER_PAGE = (
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n"
)
COMMON = (
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
)
VECTOR = "\tfield:int vector;\toffset:8;\tsize:4;\tsigned:1;\n"
TICK = "name: tick\nID: 7\nformat:\n" + COMMON + VECTOR
NAMED = (
    "name: named\nID: 8\nformat:\n" + COMMON
    + "\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
    + "\tfield:__rel_loc char[] other;\toffset:12;\tsize:4;\tsigned:0;\n"
    + "\tfield:char comm[8];\toffset:16;\tsize:8;\tsigned:0;\n"
    + "\tfield:long state;\toffset:24;\tsize:8;\tsigned:1;\n"
)  # fmt: skip


def spec() -> Spec:
    fmts = {f.id: f for f in (parse_format(TICK, "t"), parse_format(NAMED, "t"))}
    return Spec(parse_header_page(HEADER_PAGE), fmts, "little")


def data_event(delta: int, payload: bytes, long_form: bool = False) -> bytes:
    payload = payload.ljust((len(payload) + 3) & ~3, b"\0")
    if long_form or len(payload) > 28 * 4:
        return struct.pack("<II", delta << 5, len(payload) + 4) + payload
    return struct.pack("<I", (len(payload) // 4) | delta << 5) + payload


def tick(delta: int, vector: int, pid: int = 1, long_form: bool = False) -> bytes:
    return data_event(delta, struct.pack("<HBBii", 7, 0, 0, pid, vector), long_form)


def page(body: bytes, ts0: int, flags: int = 0, lost: int | None = None) -> bytes:
    head = struct.pack("<QQ", ts0, len(body) | flags)
    tail = struct.pack("<Q", lost) if lost is not None else b""
    return (head + body + tail).ljust(4096, b"\0")


def test_page_times_known_answers() -> None:
    body = (
        tick(5, 1)  # 1000 + 5
        + struct.pack("<II", 30 | (3 << 5), 1)  # time extend: (1 << 27) + 3
        + tick(7, 2)
        + struct.pack("<II", 29 | (9 << 5), 12) + b"\0" * 8  # padding (discarded): no time
        + tick(1, 3, long_form=True)  # length in the next word
        + struct.pack("<II", 31 | (5 << 5), 2)  # absolute: (2 << 27) | 5
        + tick(0, 4)
        + struct.pack("<I", 29)  # null padding: the page ends here
        + tick(1, 99)  # never read
    )  # fmt: skip
    events = list(parse_page(page(body, 1000), 3, spec()))
    t1 = 1005
    t2 = t1 + (1 << 27) + 3 + 7
    t3 = t2 + 1
    t4 = (2 << 27) | 5
    assert [(e.ts, e.fields["vector"], e.cpu, e.name) for e in events] == [
        (t1, 1, 3, "t:tick"),
        (t2, 2, 3, "t:tick"),
        (t3, 3, 3, "t:tick"),
        (t4, 4, 3, "t:tick"),
    ]


def test_page_lost_events_flag() -> None:
    p = page(tick(1, 1), 50, flags=(1 << 31) | (1 << 30), lost=17)
    first, second = parse_page(p, 0, spec())
    assert (first.name, first.fields["count"]) == (LOST, 17)
    assert second.ts == 51
    unknown = next(iter(parse_page(page(tick(1, 1), 50, flags=1 << 31), 0, spec())))
    assert unknown.fields["count"] == -1


def test_page_damage_is_an_error_not_garbage() -> None:
    with pytest.raises(RingBufferError):
        list(parse_page(struct.pack("<QQ", 0, 9000).ljust(4096, b"\0"), 0, spec()))
    with pytest.raises(RingBufferError):
        # an event claiming more bytes than the commit holds
        list(parse_page(page(struct.pack("<I", 20), 0), 0, spec()))


def torn(body: bytes, at: int, ts0: int) -> bytes:
    """A page whose commit says `body` but whose bytes from `at` on are still
    zeros: copied while a writer was at work (a type_len 0 event of length 0)."""
    p = bytearray(page(body, ts0))
    p[16 + at : 16 + len(body)] = bytes(len(body) - at)
    return bytes(p)


def test_a_torn_page_is_cut_at_the_damage_and_flagged() -> None:
    good = tick(1, 1) + tick(1, 2)
    cut = 16 + len(tick(1, 3))
    pages = [page(good, 100), torn(tick(1, 3) + tick(1, 98) + tick(1, 99), cut - 16, 300)]
    pages.append(page(good, 500))
    damaged: list[Damage] = []
    events = list(read_pages(pages, 2, spec(), damaged))
    assert [(e.name, e.fields.get("vector")) for e in events] == [
        ("t:tick", 1),
        ("t:tick", 2),
        ("t:tick", 3),  # before the damage: kept
        (LOST, None),  # the rest of the page: flagged lost, never decoded (no 98, no 99)
        ("t:tick", 1),  # the next page: whole
        ("t:tick", 2),
    ]
    lost = events[3]
    assert lost.cpu == 2 and lost.ts == events[2].ts == 301  # where the page was cut
    assert lost.fields["damaged"] == cut
    assert damaged == [Damage(2, 1, cut, f"an event of -4 bytes at page offset {cut}")]
    assert f"cpu2 page offset {cut}" in str(damaged[0])
    # Pairing forgets what was open there, but the damage is not a buffer overrun.
    assert pair(events).lost == 0
    # Negative control: whole pages, nothing flagged.
    whole: list[Damage] = []
    assert LOST not in {e.name for e in read_pages([page(good, 100)] * 2, 2, spec(), whole)}
    assert whole == []


def test_a_torn_page_in_a_recording_costs_only_its_tail(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / "t")
    raw = tmp_path / "t" / "cpu0.raw"
    data = bytearray(raw.read_bytes())
    intact = Capture.load(SAMPLE)
    spec_ = intact.spec()
    # A page of cpu0 holding several events, the first a short data event:
    # its bytes after that event zeroed up to the commit, as a torn copy.
    for k in range(len(data) // 4096):
        pg = bytes(data[k * 4096 : (k + 1) * 4096])
        first, commit = struct.unpack_from("<IQ", pg, 16)[0], struct.unpack_from("<Q", pg, 8)[0]
        n = len(list(parse_page(pg, 0, spec_)))
        if 1 <= first & 0x1F <= 28 and n > 3 and not commit >> 30:
            break
    else:
        pytest.fail("no page to tear in the sample")
    cut = 16 + 4 + (first & 0x1F) * 4
    data[k * 4096 + cut : k * 4096 + 16 + (commit & 0x7FFFFFF)] = bytes(
        16 + (commit & 0x7FFFFFF) - cut
    )
    raw.write_bytes(bytes(data))
    damaged = Capture.load(tmp_path / "t")

    before, after = intact.events_in_order(), damaged.events_in_order()
    assert intact.damage == [] and intact.damage_warning() is None  # negative control
    assert [(d.cpu, d.page, d.offset) for d in damaged.damage] == [(0, k, cut)]
    [lost] = [e for e in after if e.name == LOST]
    assert (lost.cpu, lost.fields) == (0, {"count": -1, "damaged": cut})
    kept = [e for e in after if e.name != LOST]
    lost_here = n - 1  # the page's events after its first
    assert len(kept) == len(before) - lost_here
    assert all(e in before for e in kept)  # no garbage: every kept event is a real one
    warning = damaged.damage_warning()
    assert warning is not None and f"cpu0 page offset {cut}" in warning

    run = Run()
    explain_breaks(run, damaged)
    assert any(f"damaged at cpu0 page offset {cut}" in w.detail for w in run.warnings)


def test_a_recording_with_no_whole_page_is_unreadable(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / "t")
    for c in (0, 1):
        raw = tmp_path / "t" / f"cpu{c}.raw"
        raw.write_bytes(b"\xff" * raw.stat().st_size)  # not ring-buffer pages at all
    with pytest.raises(RingBufferError, match="no page is whole"):
        Capture.load(tmp_path / "t").events_in_order()


def test_formats_decode_strings_and_numbers() -> None:
    fmt = parse_format(NAMED, "t")
    assert fmt.fields["name"].kind == "data_loc" and fmt.fields["comm"].kind == "str"
    payload = bytearray(struct.pack("<HBBi", 8, 0, 0, 42))
    payload += struct.pack("<I", (6 << 16) | 32)  # name: 6 bytes at offset 32
    payload += struct.pack("<I", (4 << 16) | 22)  # other: 4 bytes at 16 + 22
    payload += b"abc\0\0\0\0\0" + struct.pack("<q", -2)
    payload += b"virtio" + b"xyz\0"
    fields = decode(fmt, bytes(payload), "little")
    assert fields == {
        "common_type": 8,
        "common_flags": 0,
        "common_preempt_count": 0,
        "common_pid": 42,
        "name": "virtio",
        "other": "xyz",
        "comm": "abc",
        "state": -2,
    }


def test_header_formats_are_checked() -> None:
    real = (SAMPLE / "header_event").read_text()
    assert check_header_event(real) is True
    with pytest.raises(FormatError):
        check_header_event(real.replace("27 bits", "26 bits"))
    with pytest.raises(FormatError):
        parse_header_page(HEADER_PAGE.replace("commit", "comit"))
    lay = parse_header_page((SAMPLE / "header_page").read_text())
    assert (lay.data_offset, lay.commit_size) == (16, 8)


# --- pairing -----------------------------------------------------------------------


def ev(ts: int, cpu: int, kind: str, task: int = 100, **fields: int | str) -> Event:
    """An event as the reader makes it; `task` is the current task (common_pid)."""
    full = {
        "begin": "ftrace:print",
        "end": "ftrace:print",
        "irq_in": "irq:irq_handler_entry",
        "irq_out": "irq:irq_handler_exit",
        "tick_in": "irq_vectors:local_timer_entry",
        "tick_out": "irq_vectors:local_timer_exit",
        "waking": "sched:sched_waking",
        "switch": "sched:sched_switch",
        "fork": "sched:sched_process_fork",
        "lost": LOST,
    }[kind]
    if kind in ("begin", "end"):
        fields = {"buf": f"rtbench {kind} {fields['case']}" + (" seq=1" if kind == "begin" else "")}
    return Event(ts, cpu, full, task, dict(fields))


def test_nested_interrupts_pair_innermost_first() -> None:
    p = pair(
        [
            ev(100, 0, "irq_in", irq=10, name="eth0"),
            ev(105, 0, "irq_in", irq=11, name="disk"),
            ev(110, 0, "tick_in", vector=236),
            ev(115, 0, "tick_out", vector=236),
            ev(118, 0, "irq_out", irq=11),
            ev(130, 0, "irq_out", irq=10),
        ]
    )
    assert [(i.label, i.start, i.end) for i in p.irqs] == [("disk", 105, 118), ("eth0", 100, 130)]
    assert [(i.start, i.duration) for i in p.timers] == [(110, 5)]
    assert not p.unpaired


def test_interrupts_pair_per_cpu() -> None:
    # the same irq number on two CPUs at once, interleaved in time
    p = pair(
        [
            ev(100, 0, "irq_in", irq=5, name="a"),
            ev(101, 1, "irq_in", irq=5, name="a"),
            ev(103, 0, "irq_out", irq=5),
            ev(110, 1, "irq_out", irq=5),
        ]
    )
    assert sorted((i.cpu, i.duration) for i in p.irqs) == [(0, 3), (1, 9)]


def test_edges_entry_without_exit_and_exit_without_entry() -> None:
    p = pair(
        [
            ev(10, 0, "irq_out", irq=3),  # the trace began inside a handler
            ev(20, 0, "irq_in", irq=3, name="x"),
            ev(21, 0, "irq_in", irq=4, name="y"),  # its exit was lost
            ev(30, 0, "irq_out", irq=3),  # closes 3; 4 is given up
            ev(40, 1, "tick_in", vector=236),  # the trace ends inside it
        ]
    )
    assert [(i.label, i.duration) for i in p.irqs] == [("x", 10)]
    assert p.unpaired == Counter(
        {"irq exit without entry": 1, "irq entry without exit": 1, "timer entry without exit": 1}
    )
    assert p.timer_entries == {1: [40]}


def test_lost_events_forget_what_was_open_on_that_cpu() -> None:
    p = pair(
        [
            ev(10, 0, "irq_in", irq=3, name="x"),
            ev(11, 1, "irq_in", irq=3, name="x"),
            ev(20, 0, "lost", count=5),
            ev(30, 0, "irq_out", irq=3),
            ev(31, 1, "irq_out", irq=3),
        ]
    )
    assert [(i.cpu, i.duration) for i in p.irqs] == [(1, 20)]
    assert p.lost == 5
    assert p.unpaired["entry dropped at lost events"] == 1
    assert p.unpaired["irq exit without entry"] == 1


def test_wakeup_follows_the_task_across_cpus() -> None:
    p = pair(
        [
            ev(100, 0, "waking", pid=42, comm="b", target_cpu=1),
            ev(120, 0, "waking", pid=42, comm="b", target_cpu=1),  # again: keeps the first
            ev(130, 1, "switch", prev_pid=0, next_pid=42),
        ]
    )
    (w,) = p.wakeups
    assert (w.pid, w.latency, w.cpu, w.waker_cpu, w.comm) == (42, 30, 1, 0, "b")


def test_wakeup_of_a_running_task_is_not_a_latency() -> None:
    p = pair(
        [
            ev(10, 0, "switch", prev_pid=0, next_pid=42),
            ev(20, 1, "waking", pid=42),  # still on CPU 0: no switch-in follows
            ev(25, 1, "waking", pid=7),  # 7 was running before the trace saw it
            ev(30, 1, "switch", prev_pid=7, next_pid=0),  # ...as this shows
            ev(40, 0, "switch", prev_pid=42, next_pid=0),
            ev(50, 1, "waking", pid=42),
            ev(65, 0, "switch", prev_pid=0, next_pid=42),
            ev(90, 1, "switch", prev_pid=0, next_pid=7),  # not a wake-up of 7
        ]
    )
    assert [(w.pid, w.latency) for w in p.wakeups] == [(42, 15)]
    assert p.unpaired["wakeup of a running task"] == 2


def test_windows_attribute_by_start() -> None:
    events = [
        ev(40, 1, "tick_in", vector=1),
        ev(50, 1, "begin", task=9, case="A"),  # the tick above started before
        ev(60, 1, "tick_out", vector=1),
        ev(190, 1, "tick_in", vector=1),  # starts inside, ends after the end mark
        ev(200, 1, "end", task=9, case="A"),
        ev(210, 1, "tick_out", vector=1),
        ev(300, 1, "begin", task=9, case="B"),  # cut short: no end marker
        ev(310, 1, "tick_in", vector=1),
        ev(312, 1, "tick_out", vector=1),
    ]
    p = pair(events)
    a, b = p.windows
    assert (a.case, a.begin, a.end, a.complete, a.pid) == ("A", 50, 200, True, 9)
    assert (b.case, b.end, b.complete) == ("B", None, False)
    run = Run(
        hello={"params": {"cpu": 1}},
        cases=[CaseResult("A", outcome="passed"), CaseResult("B", outcome="error")],
    )
    split_cases(run, p, fake_capture(), 1)
    ta, tb = (c.find("kernel.local_timer") for c in run.cases)
    assert ta is not None and tb is not None
    assert values(ta) == [20]
    assert values(tb) == [2]
    assert "cut short" in run.cases[1].warnings[0].detail


def test_agent_tasks_are_the_marker_writer_and_its_descendants() -> None:
    p = pair(
        [
            ev(1, 0, "fork", parent_pid=1, child_pid=2),
            ev(2, 0, "fork", parent_pid=2, child_pid=3),
            ev(3, 0, "fork", parent_pid=9, child_pid=10),
            ev(4, 0, "fork", parent_pid=3, child_pid=4),
        ]
    )
    assert p.agent_tasks(1) == {1, 2, 3, 4}
    assert p.agent_tasks(9) == {9, 10}


# --- the split of a run, on model objects ------------------------------------------


def values(s: Series) -> list[int]:
    assert s.samples is not None
    return [int(x) for x in s.samples]


def fake_capture(events: tuple[str, ...] = EVENTS, missing: tuple[str, ...] = ()) -> Capture:
    return Capture(
        clock="mono_raw",
        cpus=[0, 1],
        events=list(events),
        missing=list(missing),
        header_page="",
        header_event="",
        formats={},
        files={},
        page_size=4096,
        source="instance rtbench-test",
    )


def synthetic_trace(
    period: int, tick_ns: int, extra_timer_every: int = 0, silent: range = range(0)
) -> list[Event]:
    """Agent pid 9 with tasks 10 and 11 (forked); a SEM-SHF-like window with
    wake-ups and an irq on each CPU, then a CLK-DUR window with ticks every
    `period` on CPU 1 (and, if asked, an extra hrtimer interrupt every n-th
    interval), each lasting `tick_ns`; no tick at all on CPU 1 in the
    `silent` slots (the CPU did not run this kernel)."""
    e = [
        ev(0, 1, "fork", task=9, parent_pid=9, child_pid=10),
        ev(1, 1, "fork", task=10, parent_pid=10, child_pid=11),
        ev(1000, 1, "begin", task=9, case="SEM-SHF"),
        ev(1100, 1, "waking", pid=11, comm="shf-b"),
        ev(1400, 1, "switch", prev_pid=10, next_pid=11),
        ev(1500, 0, "waking", pid=500, comm="kworker"),
        ev(1800, 1, "switch", prev_pid=11, next_pid=500),
        ev(2000, 0, "irq_in", irq=36, name="virtio1-req.0"),
        ev(2300, 0, "irq_out", irq=36),
        ev(2400, 1, "irq_in", irq=36, name="virtio1-req.0"),
        ev(2450, 1, "irq_out", irq=36),
        ev(2500, 1, "irq_in", irq=40, name="eth0"),
        ev(2900, 1, "irq_out", irq=40),
        ev(3000, 1, "end", task=9, case="SEM-SHF"),
        ev(10_000, 1, "begin", task=9, case="CLK-DUR"),
    ]
    t = 20_000
    for k in range(50):
        if k not in silent:
            e += [ev(t, 1, "tick_in", vector=236), ev(t + tick_ns, 1, "tick_out", vector=236)]
        e += [ev(t + 7, 0, "tick_in", vector=236), ev(t + 9, 0, "tick_out", vector=236)]
        if extra_timer_every and k % extra_timer_every == 0:
            x = t + period // 3
            e += [ev(x, 1, "tick_in", vector=236), ev(x + tick_ns, 1, "tick_out", vector=236)]
        t += period
    e.append(ev(t, 1, "end", task=9, case="CLK-DUR"))
    return sorted(e, key=lambda x: (x.ts, x.cpu))


def clk_dur_case(period_ns: int | None, gap_ns: int = 5100) -> CaseResult:
    series = [Series("CLK-DUR", "tick", samples=np.full(10, gap_ns), n=10, sum=10 * gap_ns)]
    if period_ns is not None:
        series.append(
            Series("CLK-DUR", "tick_period", samples=np.array([period_ns]), n=1, sum=period_ns)
        )
    return CaseResult("CLK-DUR", outcome="passed", series=series)


def synthetic_run(period_ns: int | None) -> Run:
    return Run(
        hello={"params": {"cpu": 1}},
        cases=[
            CaseResult("SEM-SHF", outcome="passed"),
            clk_dur_case(period_ns),
            CaseResult("THR-LOCK", outcome="unsupported"),
        ],
    )


def test_split_series_per_case() -> None:
    run = synthetic_run(4 * MS)
    split_cases(run, pair(synthetic_trace(4 * MS, 3200)), fake_capture(), 1)
    shf = run.case("SEM-SHF")
    assert shf is not None
    by_label = {s.label: s for s in shf.series}
    assert values(by_label["kernel.wakeup"]) == [300]
    # the kworker was switched in on CPU 1: the CPU's view, not the agent's
    assert values(by_label["kernel.wakeup_cpu"]) == [300, 300]
    assert values(by_label["kernel.irq"]) == [50, 400]
    assert values(by_label["kernel.irq[cpu=0,irq=virtio1-req.0]"]) == [300]
    assert values(by_label["kernel.irq[cpu=1,irq=eth0]"]) == [400]
    assert by_label["kernel.local_timer"].n == 0 and by_label["kernel.local_timer"].min is None
    # conservation: the per-irq series on the measurement CPU add up to kernel.irq
    per_irq = [s for s in shf.series if s.name == "kernel.irq" and s.point.get("cpu") == 1]
    assert sum(s.n for s in per_irq) == by_label["kernel.irq"].n
    assert sum(s.sum for s in per_irq) == by_label["kernel.irq"].sum
    for s in shf.series:
        v = values(s)
        assert (s.n, s.min, s.max, s.sum) == (
            (len(v), min(v), max(v), sum(v)) if v else (0, None, None, 0)
        )
    assert [w.code for w in shf.warnings] == ["trace"]
    unsupported = run.case("THR-LOCK")
    assert unsupported is not None and not unsupported.series and not unsupported.warnings


def test_split_leaves_out_series_of_missing_events() -> None:
    run = synthetic_run(4 * MS)
    have = tuple(e for e in EVENTS if not e.startswith("irq_vectors"))
    split_cases(run, pair(synthetic_trace(4 * MS, 3200)), fake_capture(have, ("x:y",)), 1)
    shf = run.case("SEM-SHF")
    assert shf is not None and shf.find("kernel.local_timer") is None
    assert shf.find("kernel.irq") is not None
    assert any("missing" in w.detail for w in run.warnings)


def test_clk_dur_cross_check_passes_when_periods_agree() -> None:
    run = synthetic_run(4 * MS)
    split_cases(run, pair(synthetic_trace(4 * MS, 3200, extra_timer_every=4)), fake_capture(), 1)
    clk = run.case("CLK-DUR")
    assert clk is not None
    (check,) = clk.checks
    assert (check.name, check.verdict) == ("trace_tick_period", "pass")
    assert "agent: 4.000 ms, mean gap 5.1 µs; kernel: 4.000 ms, mean local_timer 3.2 µs" in (
        check.detail
    )
    # Durations too: the gap holds the handler and what no kernel event covers.
    assert "median tick gap 5.1 µs, median local_timer 3.2 µs, gap/handler 1.6x" in check.detail
    assert "1.9 µs a tick covered by no kernel event" in check.detail
    assert clk.outcome == "passed"


def with_stall(run: Run, start: int, length: int) -> CaseResult:
    clk = run.case("CLK-DUR")
    assert clk is not None
    clk.series += [
        Series("CLK-DUR", "stall", samples=np.array([length]), n=1, sum=length, kind="duration"),
        Series("CLK-DUR", "stall_start", samples=np.array([start]), n=1, sum=start,
               kind="timestamp"),
    ]  # fmt: skip
    return clk


THROTTLING = {"rt_throttling": {"runtime_us": 950_000, "period_us": 1_000_000, "enabled": True}}


def test_a_stall_with_the_kernels_timer_late_blames_no_thread() -> None:
    """The CPU's own local timer did not come for 20 ms during CLK-DUR's
    stall: the CPU was not running this kernel (a hypervisor, or interrupts
    off), whatever the throttling settings say."""
    run = synthetic_run(4 * MS)
    run.machine = THROTTLING
    # Ticks at 20 us + k * 4 ms after the trace start; the case began at 10 us.
    clk = with_stall(run, 10_000 + 10 * 4 * MS + 500, 20 * MS)
    split_cases(run, pair(synthetic_trace(4 * MS, 3200, silent=range(11, 16))), fake_capture(), 1)
    (cause,) = [w.detail for w in clk.warnings if w.code == "stall_cause"]
    assert "the CPU was not running this kernel's code" in cause
    assert "local_timer_entry 24.0 ms after the one before" in cause
    assert "ticked through" not in cause and "throttling" not in cause.split(";")[0]


def test_a_stall_the_kernel_ticked_through_is_this_kernels_doing() -> None:
    run = synthetic_run(4 * MS)
    run.machine = THROTTLING
    clk = with_stall(run, 10_000 + 10 * 4 * MS + 500, 48_800_000)
    split_cases(run, pair(synthetic_trace(4 * MS, 3200)), fake_capture(), 1)
    (cause,) = [w.detail for w in clk.warnings if w.code == "stall_cause"]
    assert "not running" not in cause and "1 the kernel ticked through" in cause
    # 48.8 ms against a 50 ms throttle stop: consistent with RT throttling.
    assert "consistent with throttling" in cause


def test_without_a_trace_a_short_stall_is_not_called_throttling() -> None:
    run = synthetic_run(4 * MS)
    clk = with_stall(run, 1_000_000, 20 * MS)  # under half the 50 ms stop
    stalls.explain(clk, THROTTLING)
    assert not [w for w in clk.warnings if w.code == "stall_cause"]
    stalls.explain(clk, {"rt_throttling": {"runtime_us": -1, "period_us": 1_000_000,
                                            "enabled": False}})  # fmt: skip
    (cause,) = [w.detail for w in clk.warnings if w.code == "stall_cause"]
    assert "not RT throttling" in cause


def test_clk_dur_cross_check_detects_a_wrong_period() -> None:
    # The agent claims 250 Hz; the kernel ticked at 100 Hz.
    run = synthetic_run(4 * MS)
    split_cases(run, pair(synthetic_trace(10 * MS, 3200)), fake_capture(), 1)
    clk = run.case("CLK-DUR")
    assert clk is not None
    (check,) = clk.checks
    assert check.verdict == "fail" and "kernel: 10.000 ms" in check.detail
    assert clk.outcome == "failed"
    # ...and the tolerance is what it says: just inside passes
    near = int(4 * MS * (1 + TICK_TOLERANCE * 0.9))
    run = synthetic_run(near)
    split_cases(run, pair(synthetic_trace(4 * MS, 3200)), fake_capture(), 1)
    clk = run.case("CLK-DUR")
    assert clk is not None and clk.checks[0].verdict == "pass"


@pytest.mark.parametrize("attr", [True, False], ids=["attrs", "legacy point"])
def test_clk_dur_cross_check_names_the_source_that_is_the_tick(attr: bool) -> None:
    """Under a hypervisor CLK-DUR may take the host's 1 ms timer for the
    tick; the kernel's own 4 ms tick is then one of its other sources (its
    period an attribute; streams before attrs had it as the point)."""
    run = synthetic_run(1 * MS)
    clk = run.case("CLK-DUR")
    assert clk is not None
    period: dict[str, int | str] = {"period_ns": 4 * MS + 5}
    clk.series.append(
        Series("CLK-DUR", "recurring", {"rank": 1} if attr else period, n=2, sum=34_000,
               samples=np.array([16_000, 18_000]), attrs=period if attr else {})
    )  # fmt: skip
    split_cases(run, pair(synthetic_trace(4 * MS, 3200)), fake_capture(), 1)
    (check,) = clk.checks
    # CLK-DUR did see the kernel's tick, among its sources: that agrees
    assert check.verdict == "pass"
    assert "tick_source" in [w.code for w in clk.warnings]
    assert "agent: 1.000 ms" in check.detail and "kernel: 4.000 ms" in check.detail
    assert "the kernel's tick is CLK-DUR's other recurring source, 4.000 ms, mean gap 17.0 µs" in (
        check.detail
    )


def test_clk_dur_without_a_detected_period_is_said_not_checked() -> None:
    run = synthetic_run(None)
    split_cases(run, pair(synthetic_trace(4 * MS, 3200)), fake_capture(), 1)
    clk = run.case("CLK-DUR")
    assert clk is not None and not clk.checks
    assert any("no tick cross-check" in w.detail for w in clk.warnings)


def test_no_markers_is_a_warning() -> None:
    run = synthetic_run(4 * MS)
    events = [e for e in synthetic_trace(4 * MS, 3200) if e.name != "ftrace:print"]
    split_cases(run, pair(events), fake_capture(), 1)
    assert any("no case markers" in w.detail for w in run.warnings)
    assert all(not c.series or c.case == "CLK-DUR" for c in run.cases)


def test_unavailable_is_said_once() -> None:
    rec = Recorder()
    rec.unavailable = "this kernel has no tracefs"
    run = synthetic_run(4 * MS)
    finish(run, rec)
    assert [(w.code, w.detail) for w in run.all_warnings()] == [
        ("trace", "no kernel trace: this kernel has no tracefs")
    ]


def test_no_tracefs_in_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracefs_mod, "kernel_has_tracefs", lambda: False)
    with Recorder() as rec:
        assert rec.marker is None and rec.agent_args() == []
    assert rec.unavailable is not None and "no tracefs" in rec.unavailable
    assert rec.capture is None


# --- the journal ------------------------------------------------------------------------


def test_journal_restores_originals_in_reverse(tmp_path: Path) -> None:
    clock = tmp_path / "trace_clock"
    clock.write_text("[local] global mono_raw\n")
    size = tmp_path / "buffer_size_kb"
    size.write_text("7 (expanded: 1408)\n")
    enable = tmp_path / "enable"
    enable.write_text("0\n")
    j = TraceJournal()
    order: list[str] = []
    j.did("first", lambda: order.append("first"))
    j.set(clock, "mono_raw")
    j.set(size, "16384")
    j.set(enable, "1")
    j.set(enable, "0")  # a second write keeps the first original
    j.did("last", lambda: order.append("last"))
    assert j.original(enable) == "0" and j.original(size) == "1408"
    assert j.playback() == []
    assert (clock.read_text(), size.read_text(), enable.read_text()) == ("local", "1408", "0")
    assert order == ["last", "first"]


def test_journal_goes_on_after_a_failure(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("1")
    b.write_text("2")
    j = TraceJournal()
    j.set(a, "x")
    j.set(b, "y")
    b.unlink()
    (tmp_path / "b").mkdir()  # writing back to b now fails
    failed = j.playback()
    assert len(failed) == 1 and str(b) in failed[0]
    assert a.read_text() == "1"


# --- the real tracefs (root) ---------------------------------------------------------

_T = TypeVar("_T")


def root_only(test: _T) -> _T:
    """The real tracefs: root (the one policy of tests/conftest.py) and a
    kernel that has it."""
    no_tracefs = pytest.mark.skipif(
        not tracefs_mod.kernel_has_tracefs(), reason="needs a kernel with tracefs"
    )
    return cast(_T, pytest.mark.root("writing the kernel's tracefs")(no_tracefs(test)))


def _settings(d: Path) -> dict[str, str]:
    return {
        "trace_clock": tracefs_mod._selected((d / "trace_clock").read_text()),
        "tracing_on": (d / "tracing_on").read_text().strip(),
        "buffer_size_kb": (d / "buffer_size_kb").read_text().strip(),
        "sched_switch": (d / "events/sched/sched_switch/enable").read_text().strip(),
    }


def _workload(marker: Path) -> None:
    with marker.open("w") as m:
        m.write("rtbench begin LIVE seq=1\n")
        m.flush()
        go = threading.Event()
        t = threading.Thread(target=go.wait)
        t.start()
        time.sleep(0.01)
        go.set()
        t.join()
        m.write("rtbench end LIVE\n")


@pytest.fixture
def still_top_level() -> Iterator[None]:
    """No top-level recording (another rtbench's test) may change the
    machine's settings between this test's before and after."""
    with toplevel_lock(shared=True):
        yield


@root_only
def test_recorder_in_an_instance_restores_everything(still_top_level: None) -> None:
    before = snapshot(own_instances=False)
    with Recorder() as rec:
        assert rec.unavailable is None, rec.unavailable
        assert rec.marker is not None
        during = _settings(rec.dir)
        assert during == {
            "trace_clock": "mono_raw",
            "tracing_on": "1",
            "buffer_size_kb": during["buffer_size_kb"],
            "sched_switch": "1",
        }
        # the kernel rounds the size up to whole sub-buffers
        assert 0 <= int(during["buffer_size_kb"]) - tracefs_mod.BUFFER_KB < 16
        assert rec.dir.name in snapshot()["instances"]
        _workload(rec.marker)
    assert snapshot(own_instances=False) == before
    assert not rec.dir.exists() and rec.restore_failures == []
    assert rec.capture is not None
    p = pair(rec.capture.events_in_order(FIELDS))
    assert [(w.case, w.complete) for w in p.windows] == [("LIVE", True)]
    rec.capture.close()


@root_only
@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_recorder_restores_when_the_block_fails(
    exc: type[BaseException], still_top_level: None
) -> None:
    before = snapshot(own_instances=False)
    with pytest.raises(exc), Recorder() as rec:
        assert rec.marker is not None
        raise exc("boom")
    assert snapshot(own_instances=False) == before and not rec.dir.exists()
    assert rec.capture is not None  # what was recorded until then is kept
    rec.capture.close()


@root_only
def test_recorder_at_the_top_level_restores_every_setting() -> None:
    """The fallback without instances changes the machine's own settings:
    shown changed during the block (so this test can fail), and back after."""
    with toplevel_lock(shared=False):  # alone at the top level, before to after
        before = snapshot(own_instances=False)
        with Recorder(instance=False, lock_toplevel=False) as rec:
            assert rec.dir == TRACEFS, rec.unavailable
            during = _settings(TRACEFS)
            assert during["trace_clock"] == "mono_raw" and during["sched_switch"] == "1"
            assert snapshot(own_instances=False) != before
            _workload(TRACEFS / "trace_marker")
        after = snapshot(own_instances=False)
    assert after == before, rec.restore_failures
    assert rec.capture is not None and rec.capture.source == "top level"
    assert any(w.case == "LIVE" for w in pair(rec.capture.events_in_order(FIELDS)).windows)
    rec.capture.close()


@root_only
def test_live_times_equal_the_kernels_text() -> None:
    with Recorder(drain_interval=3600.0) as rec:
        assert rec.marker is not None
        _workload(rec.marker)
        (rec.dir / "tracing_on").write_text("0")
        text = (rec.dir / "trace").read_text()
    assert rec.capture is not None
    try:
        assert_matches_text(rec.capture, text, at_least=4)
    finally:
        rec.capture.close()


@root_only
@pytest.mark.skipif(not Path("/usr/bin/unshare").exists(), reason="needs unshare(1)")
def test_recorder_mounts_tracefs_and_unmounts_it_after() -> None:
    """In a private mount namespace, where tracefs is unmounted first: the
    recorder must mount it, and leave it unmounted again."""
    script = (
        "import sys\n"
        "from rtbench.trace.tracefs import Recorder, TRACEFS, is_mounted, umount\n"
        "if is_mounted(TRACEFS): umount(TRACEFS)\n"
        "assert not is_mounted(TRACEFS)\n"
        "with Recorder() as rec:\n"
        "    assert rec.unavailable is None, rec.unavailable\n"
        "    assert rec.mounted_here and is_mounted(TRACEFS)\n"
        "assert not is_mounted(TRACEFS), 'left mounted'\n"
        "assert rec.restore_failures == [], rec.restore_failures\n"
        "rec.capture.close()\n"
        "print('ok')\n"
    )
    mounted_before = is_mounted(TRACEFS)
    r = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # unshare(1)'s own refusal, not the script's: no mount namespaces, or
    # a root that is no mount point (a chroot) cannot be made private.
    if r.returncode != 0 and r.stderr.startswith("unshare: "):
        pytest.skip(f"no private mount namespace here: {r.stderr.strip()}")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
    assert is_mounted(TRACEFS) == mounted_before  # this namespace's mount untouched


@root_only
def test_a_second_top_level_recording_is_refused() -> None:
    with toplevel_lock(shared=True), Recorder(instance=False) as rec:
        assert rec.marker is None
    assert rec.unavailable is not None and "another recording" in rec.unavailable


@root_only
def test_not_permitted_as_another_user() -> None:
    """For real: a forked child drops to `nobody` and tries."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery past this point
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            with Recorder() as rec:
                msg = rec.unavailable or "recorded"
            os.write(write, msg.encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        msg = f.read()
    assert os.waitstatus_to_exitcode(status) == 0
    assert "root" in msg and ("not permitted" in msg or "needs root" in msg), msg
