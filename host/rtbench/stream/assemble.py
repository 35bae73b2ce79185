"""Turn parsed records into the data model (`rtbench.model.Run`).

Policy for records that passed the CRC but do not make sense:

- A record missing a required key, or holding a value of the wrong type
  (a string where an integer belongs, an unknown verdict), is reported as
  `damaged` at its line and ignored; the rest of the run is still built.
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
from typing import Any, TypeVar

import numpy as np

from rtbench.model import (
    CaseOutcome,
    CaseResult,
    Check,
    Histogram,
    Int64Array,
    Point,
    Run,
    Series,
    StreamIssue,
    Verdict,
    Warning,
    point_key,
)
from rtbench.stream.codec import ENCODING, CodecError, decode_chunks
from rtbench.stream.parser import IssueKind, Record

ENDED_INSIDE = "stream ended inside the case"
END_LOST = "end record lost"

_VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "error")
_OUTCOMES: tuple[CaseOutcome, ...] = ("passed", "failed", "error", "unsupported")


_LAYOUT_FIELDS = {"log2": ("sub_bits",), "linear": ("lo", "width", "buckets")}

_S = TypeVar("_S", bound=str)


class _Bad(Exception):
    """Internal: why a record is ignored."""


# --- typed access to record bodies (JSON gives Any; these make it honest)


def _present(body: dict[str, Any], key: str) -> Any:
    if key not in body:
        raise _Bad(f"no {key!r}")
    return body[key]


def _wrong(key: str, value: Any, expected: str) -> _Bad:
    return _Bad(f"{key!r} must be {expected}, not {type(value).__name__} {value!r:.40}")


def _as_int(value: Any, what: str) -> int:
    # bool is an int subclass in Python, but `true` is not a number in JSON.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(what, value, "an integer")
    return value


def _int(body: dict[str, Any], key: str, default: int | None = None) -> int:
    return _as_int(body.get(key, default) if default is not None else _present(body, key), key)


def _opt_int(body: dict[str, Any], key: str) -> int | None:
    return None if body.get(key) is None else _int(body, key)


def _str(body: dict[str, Any], key: str, default: str | None = None) -> str:
    value = body.get(key, default) if default is not None else _present(body, key)
    if not isinstance(value, str):
        raise _wrong(key, value, "a string")
    return value


def _obj(body: dict[str, Any], key: str, required: bool = False) -> dict[str, Any]:
    value = _present(body, key) if required else body.get(key, {})
    if not isinstance(value, dict):
        raise _wrong(key, value, "an object")
    return value


def _choice(body: dict[str, Any], key: str, allowed: tuple[_S, ...]) -> _S:
    value = _str(body, key)
    for option in allowed:
        if value == option:
            return option
    raise _Bad(f"{key!r} is {value!r}, not one of {', '.join(allowed)}")


def _point(body: dict[str, Any]) -> Point:
    point = _obj(body, "point")
    for k, v in point.items():
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise _wrong(f"point.{k}", v, "an integer or a string")
    return point


def _layout(body: dict[str, Any]) -> dict[str, Any]:
    """The histogram layout, with the fields its kind needs. Unknown kinds pass
    through (a newer agent's); analysis refuses what it cannot bucket."""
    layout = _obj(body, "layout", required=True)
    kind = layout.get("kind")
    for key in _LAYOUT_FIELDS.get(kind, ()) if isinstance(kind, str) else ():
        _as_int(_present(layout, key), f"layout.{key}")
    # 2**s buckets per octave: beyond 63 the layout is meaningless for 64-bit
    # values, and bucket arithmetic on it would not finish.
    if kind == "log2" and not 0 <= layout["sub_bits"] <= 63:
        raise _Bad(f"layout.sub_bits {layout['sub_bits']} is outside 0..63")
    return layout


def _counts(body: dict[str, Any]) -> list[tuple[int, int]]:
    pairs = _present(body, "counts")
    if not isinstance(pairs, list):
        raise _wrong("counts", pairs, "a list")
    out = []
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2:
            raise _wrong("counts", pair, "[index, count] pairs")
        out.append((_as_int(pair[0], "counts index"), _as_int(pair[1], "counts count")))
    return out


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
        }

    def issue(self, kind: IssueKind, detail: str, line: int | None = None) -> None:
        self.issues.append(StreamIssue(kind, detail, self.line if line is None else line))

    def add(self, record: Record) -> None:
        self.line = record.line
        handler = self.handlers.get(record.kind)
        if handler is None:
            self.issue("version", f"unknown record kind {record.kind!r} ignored (newer agent?)")
            return
        try:
            handler(record.body)
        except _Bad as e:
            self.issue("damaged", f"{record.kind} record: {e}")

    def case(self, body: dict[str, Any]) -> _CaseBuilder:
        case_id = _str(body, "case")
        self.last_case = case_id
        builder = self.cases.get(case_id)
        if builder is None:
            builder = self.cases[case_id] = _CaseBuilder(CaseResult(case_id))
        return builder

    def series(self, body: dict[str, Any]) -> _SeriesBuilder:
        # Validate everything before creating the case, so that a bad record
        # does not leave an empty case or series behind.
        name, point, unit = _str(body, "series"), _point(body), _str(body, "unit", "ns")
        case = self.case(body)
        key = (name, point_key(point))
        builder = case.series.get(key)
        if builder is None:
            series = Series(case.result.case, name, point, unit)
            builder = case.series[key] = _SeriesBuilder(series)
        return builder

    def hello(self, body: dict[str, Any]) -> None:
        if self.run.hello:
            self.issue("order", "a second hello (another run in the same stream?) ignored")
        else:
            self.run.hello = body

    def begin(self, body: dict[str, Any]) -> None:
        title, params = _str(body, "title", ""), _obj(body, "params")
        case = self.case(body)
        if case.begun:
            self.issue("order", f"case {case.result.case} begins again; ignored")
            return
        case.begun = True
        case.result.title, case.result.params = title, params

    def samples(self, body: dict[str, Any]) -> None:
        enc = _str(body, "enc")
        if enc != ENCODING:
            raise _Bad(f"unknown sample encoding {enc!r}")
        offset, count, data = _int(body, "offset"), _int(body, "count"), _str(body, "data")
        if offset < 0 or count < 0:
            raise _Bad(f"negative offset {offset} or count {count}")
        self.series(body).chunks.append(_Chunk(offset, count, data, self.line))

    def hist(self, body: dict[str, Any]) -> None:
        n = _int(body, "n")
        # An empty histogram has no extremes to report.
        lo, hi = (
            (_opt_int(body, "min"), _opt_int(body, "max"))
            if n == 0
            else (_int(body, "min"), _int(body, "max"))
        )
        hist = Histogram(
            layout=_layout(body),
            counts=_counts(body),
            n=n,
            min=lo,
            max=hi,
            sum=_int(body, "sum"),
            underflow=_int(body, "underflow", 0),
            overflow=_int(body, "overflow", 0),
        )
        series = self.series(body).series
        if series.hist is not None:
            self.issue("order", f"a second hist for {series.label} ignored")
        else:
            series.hist = hist

    def summary(self, body: dict[str, Any]) -> None:
        n, lo, hi = _int(body, "n"), _opt_int(body, "min"), _opt_int(body, "max")
        total, dropped = _int(body, "sum"), _int(body, "dropped", 0)
        builder = self.series(body)
        if builder.has_summary:
            self.issue("order", f"a second summary for {builder.series.label} ignored")
            return
        builder.has_summary = True
        s = builder.series
        s.n, s.min, s.max, s.sum, s.dropped = n, lo, hi, total, dropped

    def check(self, body: dict[str, Any]) -> None:
        name, verdict = _str(body, "name"), _choice(body, "verdict", _VERDICTS)
        detail = _str(body, "detail", "")
        case = self.case(body)
        case.result.checks.append(Check(case.result.case, name, verdict, detail))

    def warn(self, body: dict[str, Any]) -> None:
        code, detail = _str(body, "code"), _str(body, "detail", "")
        if body.get("case") is None:
            self.run.warnings.append(Warning(code, detail))
            return
        case = self.case(body)
        case.result.warnings.append(Warning(code, detail, case.result.case))

    def end(self, body: dict[str, Any]) -> None:
        outcome = _choice(body, "result", _OUTCOMES)
        duration, reason = _int(body, "duration_ns", 0), _str(body, "reason", "")
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
