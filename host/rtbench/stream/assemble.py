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

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

from rtbench.kinds import fallback_unit
from rtbench.model import (
    CaseResult,
    Check,
    Histogram,
    Int64Array,
    Point,
    Run,
    Series,
    StreamIssue,
    Warning,
    point_key,
)
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
    line: int


@dataclass
class _SeriesBuilder:
    series: Series
    chunks: list[_Chunk] = field(default_factory=list)
    has_summary: bool = False


@dataclass
class _CaseBuilder:
    result: CaseResult
    series: dict[tuple[str, str], _SeriesBuilder] = field(default_factory=dict)
    begun: bool = False
    ended: bool = False


class _Assembler:
    def __init__(self) -> None:
        self.run = Run()
        self.issues: list[StreamIssue] = []
        self.cases: dict[str, _CaseBuilder] = {}
        self.last_case: str | None = None  # case of the latest case record
        self.line = 0  # line of the record being handled
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
        handler = self.handlers.get(record.kind)
        if handler is None:
            self.issue("version", f"unknown record kind {record.kind!r} ignored (newer agent?)")
            return
        if not record.checked:
            problem = check_record(record.kind, record.body)
            if problem is not None:
                self.issue(problem[0], f"{record.kind} record: {problem[1]}")
                return
        handler(record.body)

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
        chunk = _Chunk(body["offset"], body["count"], body["data"], self.line)
        self.series(body).chunks.append(chunk)

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
        for builder in self.cases.values():
            result = builder.result
            if not builder.ended:
                result.outcome = "error"
                result.reason = ENDED_INSIDE if result.case == self.last_case else END_LOST
            for sb in builder.series.values():
                self.place_samples(sb)
                result.series.append(sb.series)
            self.run.cases.append(result)

    def place_samples(self, builder: _SeriesBuilder) -> None:
        if not builder.chunks:
            return
        series = builder.series
        chunks = sorted(builder.chunks, key=lambda c: c.offset)
        samples = None if _overlapping(chunks) else _decode_all(chunks)
        if samples is None:
            samples = self.decode_each(series, chunks)
        series.samples = samples
        expected = max(
            max(c.offset + c.count for c in chunks),
            series.n - series.dropped if builder.has_summary else 0,
        )
        series.holes = expected - len(samples)

    def decode_each(self, series: Series, chunks: list[_Chunk]) -> Int64Array:
        """The slow path, for damaged series: decode chunk by chunk, report the
        chunks that do not decode, then those overlapping samples already placed
        (a chunk with a wrong count must not push out the good one after it)."""
        arrays = []
        end = 0
        for c in chunks:
            where = f"samples record: {series.label}: chunk at offset {c.offset}"
            try:
                values = decode_chunks([(c.data, c.count)])
            except CodecError as e:
                self.issue("damaged", f"{where} does not decode: {e.reason}", c.line)
                continue
            if c.offset < end:
                self.issue("damaged", f"{where} overlaps samples up to {end}; ignored", c.line)
                continue
            arrays.append(values)
            end = c.offset + c.count
        return np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)


def _overlapping(chunks: list[_Chunk]) -> bool:
    return any(b.offset < a.offset + a.count for a, b in itertools.pairwise(chunks))


def _decode_all(chunks: list[_Chunk]) -> Int64Array | None:
    """The fast path: every chunk of a series in one call, no copy after."""
    try:
        return decode_chunks([(c.data, c.count) for c in chunks])
    except CodecError:
        return None


def _line_order(issue: StreamIssue) -> float:
    return float("inf") if issue.line is None else issue.line


def assemble(
    records: Iterable[Record],
    issues: Iterable[StreamIssue] = (),
    log: Iterable[str] = (),
) -> Run:
    """Build a Run from intact records, the parser's issues and its log.

    The run's issues are the parser's and the assembler's, by line.
    """
    assembler = _Assembler()
    for record in records:
        assembler.add(record)
    assembler.finish()
    run = assembler.run
    run.issues = sorted([*issues, *assembler.issues], key=_line_order)
    run.log = list(log)
    return run
