"""Turn parsed records into the data model (`rtbench.model.Run`).

Policy for records that passed the CRC but do not make sense:

- A record that breaks its kind's schema (`rtbench.stream.schema`: a missing
  key, a string where an integer belongs, an unknown verdict, a value out of
  range) is reported as `damaged` at its line and ignored; the rest of the
  run is still built. The parser checks every record it accepts; records
  that did not come through it are checked here.
- A record kind this host does not know is reported as `version` (it was most
  likely written by a newer agent using the same format number) and ignored.
- A second `hello`, a second `begin`/`end` of a case, or a second `hist` or
  `summary` of a series is reported as `order`; the first one is kept.
- Samples chunks are placed by `offset`. A chunk that does not decode, or that
  overlaps samples already placed, is reported as `damaged`. Samples missing
  from the series (lost or bad chunks, a cut tail) count as `Series.holes`;
  `Series.samples` holds the samples that did arrive, in order. The expected
  length is the summary's `n - dropped` or the end of the last chunk, whichever
  is larger, so a tail is only counted when the summary arrived.
- A case without `end` is outcome `error`: "stream ended inside the case" when
  the stream stops while the case is running, else "end record lost".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

from rtbench.kinds import fallback_unit
from rtbench.model import (
    CaseResult,
    Check,
    ChunkedSamples,
    Histogram,
    Int64Array,
    Point,
    Run,
    Series,
    StreamIssue,
    Warning,
    point_key,
)
from rtbench.store.spill import Spill
from rtbench.stream.codec import CodecError, decode_chunks
from rtbench.stream.parser import IssueKind, Record
from rtbench.stream.schema import check_record

ENDED_INSIDE = "stream ended inside the case"
END_LOST = "end record lost"

_T = TypeVar("_T")


def _point(body: dict[str, Any]) -> Point:
    point: Point = body.get("point") or {}
    return point


def _or(body: dict[str, Any], key: str, default: _T) -> _T:
    """An optional field (absent or null: the default); its type was checked."""
    value = body.get(key)
    return default if value is None else cast(_T, value)


# --- building


@dataclass(slots=True)
class _Chunk:
    offset: int
    count: int
    data: str
    order: int  # its place among the run's records (seq, or arrival)
    line: int


# Samples decoded in one call: about a stored chunk's worth of records.
_BATCH_SAMPLES = 1 << 17


class _Samples:
    """One series' samples chunks, taken as they arrive (the run's length
    never stays in memory): decoded a batch at a time and placed at once
    into a `Spill` while they come in offset order, as every intact stream
    sends them. The result is what placing every chunk after the stream
    ended gives (sorted by offset, then record order; a chunk that does
    not decode or overlaps samples already placed left out): a series
    whose chunks came out of order is placed again from its parts then."""

    def __init__(self, spill: Spill, label: str, issue: Callable[..., None]) -> None:
        self.label = label
        self.issue = issue
        self.out = spill.series()
        self.end_max = 0  # end of the furthest chunk, placed or not
        self.last: tuple[int, int] | None = None  # (offset, order) of the latest
        self.disordered = False
        self.batch: list[_Chunk] = []
        self.batch_samples = 0
        self.end = 0  # end of the samples placed
        self.placed: list[tuple[int, int, int, int]] = []  # offset, order, line, count
        # Decoded chunks not placed (overlapping, or after the order broke)
        # and, while in order, the overlap each is reported with.
        self.aside: list[tuple[int, int, int, Int64Array]] = []
        self.overlaps: list[tuple[int, int, int]] = []  # line, offset, end then

    def add(self, chunk: _Chunk) -> None:
        self.end_max = max(self.end_max, chunk.offset + chunk.count)
        key = (chunk.offset, chunk.order)
        if self.last is not None and key < self.last:
            self.disordered = True
        self.last = key if self.last is None else max(self.last, key)
        self.batch.append(chunk)
        self.batch_samples += chunk.count
        if self.batch_samples >= _BATCH_SAMPLES:
            self.place_batch()

    def where(self, c: _Chunk | int) -> str:
        offset = c if isinstance(c, int) else c.offset
        return f"samples record: {self.label}: chunk at offset {offset}"

    def place_batch(self) -> None:
        batch, self.batch, self.batch_samples = self.batch, [], 0
        decoded: list[Int64Array | None] = []
        try:
            values = decode_chunks([(c.data, c.count) for c in batch])
            at = 0
            for c in batch:
                decoded.append(values[at : at + c.count])
                at += c.count
        except CodecError:
            decoded = []
            for c in batch:
                try:
                    decoded.append(decode_chunks([(c.data, c.count)]))
                except CodecError as e:
                    self.issue("damaged", f"{self.where(c)} does not decode: {e.reason}", c.line)
                    decoded.append(None)
        for c, v in zip(batch, decoded, strict=True):
            if v is None:
                continue
            if self.disordered or c.offset < self.end:
                if not self.disordered:
                    self.overlaps.append((c.line, c.offset, self.end))
                self.aside.append((c.offset, c.order, c.line, v))
                continue
            self.out.append(v)
            self.placed.append((c.offset, c.order, c.line, c.count))
            self.end = c.offset + c.count

    def result(self) -> Int64Array | ChunkedSamples:
        self.place_batch()
        if not self.disordered:
            for line, offset, end in self.overlaps:
                self.issue(
                    "damaged", f"{self.where(offset)} overlaps samples up to {end}; ignored", line
                )
            return self.out.result()
        # Out of order: every decoded chunk again, in the order of offsets
        # (rare: a transport that swapped lines; held whole to re-place).
        done = self.out.result()
        values = done.array() if isinstance(done, ChunkedSamples) else done
        parts: list[tuple[int, int, int, Int64Array]] = []
        at = 0
        for offset, order, line, count in self.placed:
            parts.append((offset, order, line, values[at : at + count]))
            at += count
        parts += self.aside
        parts.sort(key=lambda p: (p[0], p[1]))
        kept, end = [], 0
        for offset, _, line, v in parts:
            if offset < end:
                self.issue(
                    "damaged", f"{self.where(offset)} overlaps samples up to {end}; ignored", line
                )
                continue
            kept.append(v)
            end = offset + v.size
        return np.concatenate(kept) if kept else np.empty(0, dtype=np.int64)


@dataclass
class _SeriesBuilder:
    series: Series
    has_summary: bool = False


@dataclass
class _CaseBuilder:
    result: CaseResult
    series: dict[tuple[str, str], _SeriesBuilder] = field(default_factory=dict)
    begun: bool = False
    ended: bool = False


class Assembler:
    """Builds a Run from records handed over one at a time (`add`), as the
    parser accepts them, then `finish`.

    Samples chunks go into a `Spill` as they arrive, so a run of any length
    is taken in with bounded memory. The other records are few and kept:
    `finish` builds the run from them in the order of the records
    (`by_seq`: the order of their sequence numbers, the parser's order
    once it put swapped lines back; else the order they were added in),
    with a samples record standing only where its series or case first
    and last appears, so the run is the one built from every record in
    that order.
    """

    def __init__(self, by_seq: bool = True) -> None:
        self.run = Run()
        self.issues: list[StreamIssue] = []
        self.cases: dict[str, _CaseBuilder] = {}
        self.last_case: str | None = None  # case of the latest case record
        self.line = 0  # line of the record being handled
        self.by_seq = by_seq
        self.added = 0
        self.kept: list[tuple[int, Record]] = []  # (order, record) replayed by finish
        self.spill = Spill()
        # Per series (case, name, point key): its samples, and its first
        # samples record (without the data) if it has one.
        self.samples_of: dict[tuple[str, str, str], _Samples] = {}
        self.first_of: dict[tuple[str, str, str], tuple[int, Record]] = {}
        self.latest: tuple[int, Record] | None = None  # the latest samples record
        self.handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "hello": self.hello,
            "begin": self.begin,
            "samples": self.samples,
            "hist": self.hist,
            "summary": self.summary,
            "check": self.check,
            "warn": self.warn,
            "end": self.end,
            "bye": self.bye,
            "progress": self.progress,
            "break": self.brk,
        }

    def issue(self, kind: IssueKind, detail: str, line: int | None = None) -> None:
        self.issues.append(StreamIssue(kind, detail, self.line if line is None else line))

    def add(self, record: Record) -> None:
        self.line = record.line
        order = record.seq if self.by_seq else self.added
        self.added += 1
        if record.kind not in self.handlers:
            self.issue("version", f"unknown record kind {record.kind!r} ignored (newer agent?)")
            return
        if not record.checked:
            problem = check_record(record.kind, record.body)
            if problem is not None:
                self.issue(problem[0], f"{record.kind} record: {problem[1]}")
                return
        if record.kind == "samples":
            self.take_samples(order, record)
        elif record.kind != "progress":  # (nothing in it is kept)
            self.kept.append((order, record))

    def take_samples(self, order: int, record: Record) -> None:
        body = record.body
        name, pk = body["series"], point_key(_point(body))
        key = (body["case"], name, pk)
        sink = self.samples_of.get(key)
        if sink is None:
            label = f"{name}[{pk}]" if pk else name
            sink = self.samples_of[key] = _Samples(self.spill, label, self.issue)
        sink.add(_Chunk(body["offset"], body["count"], body["data"], order, record.line))
        # What builds the series and its case, without the data.
        first = self.first_of.get(key)
        if first is None or order < first[0]:
            self.first_of[key] = (order, _stub(record))
        if self.latest is None or order > self.latest[0]:
            self.latest = (order, _stub(record))

    def case(self, body: dict[str, Any]) -> _CaseBuilder:
        case_id: str = body["case"]
        self.last_case = case_id
        builder = self.cases.get(case_id)
        if builder is None:
            builder = self.cases[case_id] = _CaseBuilder(CaseResult(case_id))
        return builder

    def series(self, body: dict[str, Any]) -> _SeriesBuilder:
        # Validate everything before creating the case, so that a bad record
        # does not leave an empty case or series behind.
        name, point, kind = body["series"], _point(body), _or(body, "kind", "")
        # A record without `unit` means ns, or its kind's unit when it says.
        unit = _or(body, "unit", fallback_unit(kind) if kind else "ns")
        case = self.case(body)
        key = (name, point_key(point))
        builder = case.series.get(key)
        if builder is None:
            series = Series(case.result.case, name, point, unit, kind=kind)
            series.attrs = _or(body, "attrs", series.attrs)
            builder = case.series[key] = _SeriesBuilder(series)
        elif not builder.series.attrs:
            # A streamed series' attributes are known at its end (THR-SW's
            # windows): the samples records sent before carry none.
            builder.series.attrs = _or(body, "attrs", builder.series.attrs)
        return builder

    def hello(self, body: dict[str, Any]) -> None:
        if self.run.hello:
            self.issue("order", "a second hello (another run in the same stream?) ignored")
        else:
            self.run.hello = body

    def begin(self, body: dict[str, Any]) -> None:
        title, params = _or(body, "title", ""), _or(body, "params", dict[str, Any]())
        case = self.case(body)
        if case.begun:
            self.issue("order", f"case {case.result.case} begins again; ignored")
            return
        case.begun = True
        case.result.title, case.result.params = title, params

    def samples(self, body: dict[str, Any]) -> None:
        self.series(body)  # (its data went to `samples_of` as it arrived)

    def hist(self, body: dict[str, Any]) -> None:
        hist = Histogram(
            layout=body["layout"],
            counts=[(i, c) for i, c in body["counts"]],
            n=body["n"],
            min=body.get("min"),
            max=body.get("max"),
            sum=body["sum"],
            underflow=_or(body, "underflow", 0),
            overflow=_or(body, "overflow", 0),
        )
        series = self.series(body).series
        if series.hist is not None:
            self.issue("order", f"a second hist for {series.label} ignored")
        else:
            series.hist = hist

    def summary(self, body: dict[str, Any]) -> None:
        n, lo, hi = body["n"], body.get("min"), body.get("max")
        total, dropped = body["sum"], _or(body, "dropped", 0)
        builder = self.series(body)
        if builder.has_summary:
            self.issue("order", f"a second summary for {builder.series.label} ignored")
            return
        builder.has_summary = True
        s = builder.series
        s.n, s.min, s.max, s.sum, s.dropped = n, lo, hi, total, dropped

    def check(self, body: dict[str, Any]) -> None:
        name, verdict, detail = body["name"], body["verdict"], _or(body, "detail", "")
        case = self.case(body)
        case.result.checks.append(Check(case.result.case, name, verdict, detail))

    def warn(self, body: dict[str, Any]) -> None:
        code, detail = body["code"], _or(body, "detail", "")
        if body.get("case") is None:
            self.run.warnings.append(Warning(code, detail))
            return
        case = self.case(body)
        case.result.warnings.append(Warning(code, detail, case.result.case))

    def progress(self, body: dict[str, Any]) -> None:
        """Interim figures (`rtbench run` shows them live): the case's own
        records follow, so there is nothing here to keep."""
        del body

    def brk(self, body: dict[str, Any]) -> None:
        case = self.case(body)
        cpu = body.get("cpu")
        threshold = body.get("threshold")
        at = body.get("at_ns")
        detail = (
            f"stopped at the first {body['series']} over "
            + (f"{threshold / 1000:g} µs" if isinstance(threshold, int) else "the threshold")
            + f": sample {body['index']}"
            + (f" on CPU {cpu}" if isinstance(cpu, int) else "")
            + f", {body['value'] / 1000:.1f} µs"
            + (f", {at / 1e9:.3f} s into the case" if isinstance(at, int) else "")
            + " (the last sample of its series)"
        )
        case.result.warnings.append(Warning("break", detail, case.result.case))

    def end(self, body: dict[str, Any]) -> None:
        outcome = body["result"]
        duration, reason = _or(body, "duration_ns", 0), _or(body, "reason", "")
        case = self.case(body)
        if case.ended:
            self.issue("order", f"case {case.result.case} ends again; ignored")
            return
        case.ended = True
        r = case.result
        r.outcome, r.duration_ns, r.reason = outcome, duration, reason

    def bye(self, body: dict[str, Any]) -> None:
        if self.run.bye is not None:
            self.issue("order", "a second bye ignored")
            return
        self.run.bye = body
        self.last_case = None  # every case was over when the agent said bye

    def finish(self) -> None:
        replay = [*self.kept, *self.first_of.values()]
        if self.latest is not None:
            replay.append(self.latest)
        replay.sort(key=lambda p: p[0])
        seen: set[int] = set()
        for order, record in replay:
            if order not in seen:  # the latest samples record may be a first too
                seen.add(order)
                self.line = record.line
                self.handlers[record.kind](record.body)
        for builder in self.cases.values():
            result = builder.result
            if not builder.ended:
                result.outcome = "error"
                result.reason = ENDED_INSIDE if result.case == self.last_case else END_LOST
            for sb in builder.series.values():
                self.place_samples(result.case, sb)
                result.series.append(sb.series)
            self.run.cases.append(result)

    def place_samples(self, case: str, builder: _SeriesBuilder) -> None:
        series = builder.series
        sink = self.samples_of.get((case, series.name, point_key(series.point)))
        if sink is None:
            return
        samples = sink.result()
        series.chunked = samples
        expected = max(sink.end_max, series.n - series.dropped if builder.has_summary else 0)
        series.holes = expected - len(samples)

    def result(self, issues: Iterable[StreamIssue] = (), log: Iterable[str] = ()) -> Run:
        """The run, once every record is added; its issues are the
        parser's (`issues`) and the assembler's, by line."""
        self.finish()
        run = self.run
        run.issues = sorted([*issues, *self.issues], key=_line_order)
        run.log = list(log)
        return run


def _stub(record: Record) -> Record:
    """A samples record without its data: what builds its series and case."""
    body = {k: v for k, v in record.body.items() if k != "data"}
    return Record(record.seq, record.kind, body, record.line, record.version, checked=True)


def _line_order(issue: StreamIssue) -> float:
    return float("inf") if issue.line is None else issue.line


def assemble(
    records: Iterable[Record],
    issues: Iterable[StreamIssue] = (),
    log: Iterable[str] = (),
) -> Run:
    """Build a Run from intact records (in the order given), the parser's
    issues and its log. The run's issues are the parser's and the
    assembler's, by line."""
    assembler = Assembler(by_seq=False)
    for record in records:
        assembler.add(record)
    return assembler.result(issues, log)
