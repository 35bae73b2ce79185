"""Events from the kernel's binary ring buffer (per_cpu/cpuN/trace_pipe_raw).

Why the binary buffer and not the text `trace` file: the text file prints
times in microseconds for every nanosecond clock, and an interrupt handler
takes a few microseconds. The binary buffer holds each event's time as the
trace clock's own integer (nanoseconds for the clocks chosen here), exactly.

A sub-buffer ("page") is a header (`PageLayout`: base time stamp, commit =
bytes of data plus two flag bits for lost events) followed by events. Each
event starts with a 32-bit word: type_len (5 bits) and time_delta (27 bits):

- 1..28: a data event of type_len * 4 bytes; 0: a data event whose length is
  in the next word; the event's time is the previous one's + time_delta;
- 29: padding (a discarded event, or with delta 0 the rest of the page);
- 30: time extend: delta = next word << 27 | time_delta, for gaps > 134 ms;
- 31: absolute time stamp, next word << 27 | time_delta (top 5 bits from the
  current time).

This follows the kernel's own reader (kernel/trace/ring_buffer.c,
rb_update_read_stamp), so the times here are the ones the text file shows,
only not rounded.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from typing import Literal

from rtbench.trace.formats import Decoder, EventFormat, PageLayout, decoder

TS_SHIFT = 27
TYPE_PADDING = 29
TYPE_TIME_EXTEND = 30
TYPE_TIME_STAMP = 31
DATA_MAX_TYPE_LEN = 28
# Flag bits in the commit word (RB_MISSED_EVENTS, RB_MISSED_STORED).
MISSED_EVENTS = 1 << 31
MISSED_STORED = 1 << 30
COMMIT_MASK = (1 << 27) - 1
DELTA_MASK = (1 << TS_SHIFT) - 1
TS_MSB = 0xF8 << 56

# Name of the pseudo-event that marks lost events in a CPU's stream, so that
# pairing logic can forget what it was waiting for on that CPU.
LOST = "lost"


class RingBufferError(ValueError):
    """Bytes that are not a ring-buffer page as described; `offset`: where
    in the page the damage is (0: its header)."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Damage:
    """A page cut at damage by `read_pages`: what it held after `offset` is lost."""

    cpu: int
    page: int  # its index in the CPU's recording
    offset: int  # byte offset in the page where decoding stopped
    why: str

    def __str__(self) -> str:
        return f"cpu{self.cpu} page offset {self.offset} (page {self.page}: {self.why})"


@dataclass(slots=True)
class Event:
    ts: int  # the trace clock's value (ns for the clocks chosen here)
    cpu: int
    name: str  # "system:event", or LOST
    pid: int  # common_pid: the task that was current when it happened
    fields: dict[str, int | str] = field(default_factory=dict)


@dataclass
class Spec:
    """Everything needed to decode pages: their layout and the event formats."""

    layout: PageLayout
    formats: dict[int, EventFormat]  # by event ID (common_type)
    byteorder: Literal["little", "big"] = "little" if sys.byteorder == "little" else "big"
    page_size: int = 0  # bytes per page read (0: layout.page_size)
    # "system:event" -> the fields to decode (absent: all of them)
    fields: dict[str, frozenset[str]] = field(default_factory=dict)
    decoders: dict[int, tuple[str, Decoder]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.decoders = {
            i: (f.full_name, decoder(f, self.byteorder, self.fields.get(f.full_name)))
            for i, f in self.formats.items()
        }

    @property
    def chunk(self) -> int:
        return self.page_size or self.layout.page_size


def parse_page(page: bytes, cpu: int, spec: Spec) -> Iterator[Event]:
    """The events of one page, in order; a LOST event first when the kernel
    flagged events lost before this page (count in fields, -1 unknown)."""
    lay = spec.layout
    if len(page) < lay.data_offset:
        raise RingBufferError(f"a page of {len(page)} bytes is shorter than its header")
    e = ">" if spec.byteorder == "big" else "<"
    long_code = "Q" if lay.commit_size == 8 else "I"
    (ts,) = struct.unpack_from(e + "Q", page, lay.timestamp_offset)
    (commit,) = struct.unpack_from(e + long_code, page, lay.commit_offset)
    size = commit & COMMIT_MASK
    end = lay.data_offset + size
    if end > len(page):
        raise RingBufferError(
            f"page commit {size} runs past the {len(page)}-byte page", lay.commit_offset
        )
    if commit & MISSED_EVENTS:
        lost = -1
        if commit & MISSED_STORED and end + lay.commit_size <= len(page):
            (lost,) = struct.unpack_from(e + long_code, page, end)
        yield Event(ts, cpu, LOST, -1, {"count": lost})
    u32 = struct.Struct(e + "I").unpack_from
    u32x2 = struct.Struct(e + "II").unpack_from
    head = struct.Struct(e + "H2xi").unpack_from  # common_type, common_pid
    big = spec.byteorder == "big"
    decoders = spec.decoders
    pos = lay.data_offset
    while pos + 4 <= end:
        (word,) = u32(page, pos)
        if big:
            type_len, delta = word >> TS_SHIFT, word & DELTA_MASK  # bitfields from the top
        else:
            type_len, delta = word & 0x1F, word >> 5
        if type_len == 0:
            (_, length) = u32x2(page, pos)
            length -= 4
            data_at = pos + 8
        elif type_len <= DATA_MAX_TYPE_LEN:
            length = type_len * 4
            data_at = pos + 4
        elif type_len == TYPE_PADDING:
            if delta == 0:
                break  # the rest of the page is empty
            # A discarded event; the kernel's reader does not add its delta.
            pos += 4 + u32x2(page, pos)[1]
            continue
        elif type_len == TYPE_TIME_EXTEND:
            ts += (u32x2(page, pos)[1] << TS_SHIFT) + delta
            pos += 8
            continue
        else:  # TYPE_TIME_STAMP: absolute, the top bits from the current time
            ts = (u32x2(page, pos)[1] << TS_SHIFT | delta) | (ts & TS_MSB)
            pos += 8
            continue
        ts += delta
        nxt = data_at + ((length + 3) & ~3)
        if length < 8 or nxt > end:
            raise RingBufferError(f"cpu{cpu}: an event of {length} bytes at page offset {pos}", pos)
        pos = nxt
        etype, pid = head(page, data_at)
        known = decoders.get(etype)
        if known is None:
            continue  # an event this reader was not asked about
        name, decode = known
        yield Event(ts, cpu, name, pid, decode(page[data_at : data_at + length]))


def read_pages(
    pages: Iterable[bytes],
    cpu: int,
    spec: Spec,
    damaged: list[Damage],
    cuts: Mapping[int, int] | None = None,
) -> Iterator[Event]:
    """The events of a CPU's pages, degraded rather than discarded: a page
    damaged (torn by a writer still at work when it was copied) is cut at the
    damage. Its events before the damage are kept, the damage is appended to
    `damaged`, and a LOST event with `damaged` set stands for the rest of the
    page, so that pairing forgets what was open on the CPU as for any loss.
    Nothing after the damage in that page is decoded: no garbage. `cuts`:
    page index -> offset of bytes known lost there (on the way from a
    target): the page is cut there alike, whatever its bytes look like."""
    last = 0
    at = struct.Struct((">" if spec.byteorder == "big" else "<") + "Q")
    for n, page in enumerate(pages):
        if not last and len(page) >= spec.layout.timestamp_offset + 8:
            (last,) = at.unpack_from(page, spec.layout.timestamp_offset)  # the page's start
        cut = cuts.get(n) if cuts else None
        try:
            for e in parse_page(page if cut is None else _cut(page, cut, spec), cpu, spec):
                last = e.ts
                yield e
            if cut is None:
                continue
        except RingBufferError as err:
            if cut is None:
                damaged.append(Damage(cpu, n, err.offset, str(err).removeprefix(f"cpu{cpu}: ")))
                yield Event(last, cpu, LOST, -1, {"count": -1, "damaged": err.offset})
                continue
        damaged.append(Damage(cpu, n, cut, "bytes lost on the way from the target"))
        yield Event(last, cpu, LOST, -1, {"count": -1, "damaged": cut})


def _cut(page: bytes, at: int, spec: Spec) -> bytes:
    """`page` with its commit ending at `at`: an event running past it is
    damage (parse_page raises there), none after it is read."""
    lay = spec.layout
    if at < lay.data_offset:
        raise RingBufferError("its header was lost", at)
    e = ">" if spec.byteorder == "big" else "<"
    code = e + ("Q" if lay.commit_size == 8 else "I")
    (commit,) = struct.unpack_from(code, page, lay.commit_offset)
    size = min(commit & COMMIT_MASK, at - lay.data_offset)
    out = bytearray(page)
    # The flags' lost count sits after the data: not to be read from lost bytes.
    struct.pack_into(code, out, lay.commit_offset, size | (commit & MISSED_EVENTS))
    return bytes(out)


def merge(streams: Iterable[Iterable[Event]]) -> list[Event]:
    """All CPUs' events in time order; on a tie the lower CPU first, for a
    stable result. Each CPU's stream is already ordered, so the sort only
    merges runs; it is many times faster than heapq.merge's Python-level
    loop, at the cost of holding the events in memory."""
    return sorted(chain.from_iterable(streams), key=attrgetter("ts", "cpu"))
