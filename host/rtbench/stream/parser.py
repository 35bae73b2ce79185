"""Read the agent's line stream into checked records (docs/wire-format.md).

The parser works on bytes: the CRC covers the bytes the agent wrote, and a
console may deliver bytes that are not UTF-8. Text lines are accepted too and
encoded back to UTF-8 first. Lines without the prefix go to the log; console
noise in front of a prefix on the same line (serial timestamps) does not,
since it would repeat on every record.

What it reports (each a `StreamIssue` with the 1-based line number):

- `damaged`: a line with the `@rtb ` prefix that does not parse, fails its
  CRC, is not UTF-8, or whose body is not a JSON object; or an intact line
  whose body breaks its kind's schema (`rtbench.stream.schema`). The line
  is skipped (a schema breach still counts as arrived: its seq is sound).
- `version` also for a record using what only a newer agent writes (a
  histogram layout this host does not know): reported and skipped.
- `gap` (from `finish`): sequence numbers that never arrived count as lost
  (a damaged line's record is among them, since its seq cannot be trusted).
- `duplicate`: a sequence number already seen; the first copy is kept.
- `order`: a sequence number below one already seen but not itself seen
  before (a transport that swapped lines). Order is not loss: `finish` puts
  the records back in seq order, and a run whose records all arrived is
  complete.
- `version`: a record whose format version differs from the first record's.
- `truncated` (from `finish`): no `bye`, or a `bye` whose `records` is not
  the number of records that arrived.

A format version newer than `rtbench.STREAM_FORMAT` raises
`UnsupportedStreamVersion`: nothing in such a stream can be trusted to mean
what this host thinks it means.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from rtbench import STREAM_FORMAT
from rtbench.model import StreamIssue
from rtbench.stream.fastpath import Template, samples_body, split_fast
from rtbench.stream.limits import LOG_KEPT, LOG_LINE
from rtbench.stream.record import PREFIX, Damaged, Record, json_object, split_record
from rtbench.stream.schema import check_record

IssueKind = Literal["damaged", "gap", "duplicate", "truncated", "order", "version"]

_READ_BUFFER = 1 << 20

__all__ = ["PREFIX", "IssueKind", "ParseResult", "Record", "StreamError", "StreamParser"]


class StreamError(Exception):
    """The stream cannot be read at all (as opposed to a damaged record)."""


class UnsupportedStreamVersion(StreamError):
    """The stream uses a format newer than this host reads."""

    def __init__(self, version: int, line: int, newest: int = STREAM_FORMAT) -> None:
        super().__init__(
            f"line {line}: stream format {version} is newer than this rtbench reads "
            f"(max {newest}); upgrade the host"
        )
        self.version = version
        self.newest = newest
        self.line = line


@dataclass
class ParseResult:
    records: list[Record] = field(default_factory=list)
    issues: list[StreamIssue] = field(default_factory=list)
    log: list[str] = field(default_factory=list)  # console noise, in order


class StreamParser:
    """Feed lines one at a time; `finish()` when the stream ends.

    `feed` returns the record a line carried when it is accepted, else None
    (noise, damage, or a duplicate). Issues and noise accumulate in `issues`
    and `log`; `records` keeps every accepted record in arrival order,
    unless `keep=False`: then the caller takes each record `feed` returns
    (`stream.Assembler` does, so that a long run is not held whole).

    `fast=False` reads every record the plain way (json and the schema
    check), the reference the samples fast path is tested against.
    """

    def __init__(self, fast: bool = True, keep: bool = True) -> None:
        self.records: list[Record] = []
        self.accepted = 0  # records accepted (kept or not)
        self._keep = keep
        self._last: tuple[int, int] | None = None  # (seq, line) of the highest seq
        self.issues: list[StreamIssue] = []
        self.log: list[str] = []
        self.noise = 0  # lines of text between records (the log keeps the first)
        self.damaged = 0  # damaged record lines (issues list the first)
        self.line = 0  # number of lines fed so far
        self._first_line: dict[int, int] = {}  # seq -> line of its first copy
        self._next_seq = 0
        self._gaps: list[tuple[int, int, int]] = []  # (seq, expected seq, line)
        self._reordered = False
        self._version: int | None = None
        self._bye: Record | None = None
        self._finished = False
        self._fast = fast
        self._templates: dict[bytes, Template] = {}

    def feed(self, line: str | bytes) -> Record | None:
        self.line += 1
        raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        # Indices, not slices: a samples line is kilobytes, each slice a copy.
        end = len(raw)
        if raw.endswith(b"\n"):
            end -= 1
        if raw.endswith(b"\r", 0, end):
            end -= 1
        at = raw.find(PREFIX, 0, end)
        if at < 0:
            # Counted; a bounded sample kept (rtbench.stream.limits).
            self.noise += 1
            if len(self.log) < LOG_KEPT:
                self.log.append(raw[: min(end, LOG_LINE)].decode("utf-8", "replace"))
            return None
        start = at + len(PREFIX)
        split = split_fast(raw, start, end) if self._fast else None
        try:
            if split is None:
                # The plain way, which also says what is wrong with the line.
                version, seq, kind, body = split_record(raw[start:end])
                self._check_version(version)
                record = Record(seq, kind, json_object(body), self.line, version)
            else:
                version, seq, kind, body_at = split
                self._check_version(version)
                fast = None
                if kind == "samples":
                    fast = samples_body(raw, body_at, end - 9, self._templates)
                if fast is None:
                    body = raw[body_at : end - 9]
                    record = Record(seq, kind, json_object(body), self.line, version)
                else:  # already checked against the schema
                    record = Record(seq, kind, fast, self.line, version, checked=True)
        except Damaged as e:
            self.damaged += 1
            if self.damaged <= LOG_KEPT:
                self._issue("damaged", str(e))
            return None
        return self._accept(record)

    def _issue(self, kind: IssueKind, detail: str, line: int | None = None) -> None:
        self.issues.append(StreamIssue(kind, detail, self.line if line is None else line))

    def _check_version(self, version: int) -> None:
        if version > STREAM_FORMAT:
            raise UnsupportedStreamVersion(version, self.line)
        if version < 1:
            raise Damaged(f"stream format {version} does not exist")
        if self._version is None:
            self._version = version
        elif version != self._version:
            self._issue("version", f"format {version} in a format {self._version} stream")

    def _accept(self, record: Record) -> Record | None:
        seq = record.seq
        first = self._first_line.get(seq)
        if first is not None:
            self._issue("duplicate", f"seq {seq} repeats line {first}; the first copy is kept")
            return None
        if seq > self._next_seq:
            # Lost unless it arrives later: judged in finish().
            self._gaps.append((seq, self._next_seq, record.line))
        elif seq < self._next_seq:
            self._reordered = True
            self._issue("order", f"seq {seq} arrives after seq {self._next_seq - 1}; put back")
        self._next_seq = max(self._next_seq, seq + 1)
        self._first_line[seq] = record.line
        if not record.checked:
            problem = check_record(record.kind, record.body)
            if problem is not None:
                self._issue(problem[0], f"{record.kind} record: {problem[1]}")
                return None
            record.checked = True
        self.accepted += 1
        if self._last is None or seq > self._last[0]:
            self._last = (seq, record.line)
        if self._keep:
            self.records.append(record)
        if record.kind == "bye" and self._bye is None:
            self._bye = record
        return record

    def finish(self) -> ParseResult:
        """Report a truncated stream and return everything read."""
        if not self._finished:
            self._finished = True
            if self.noise > len(self.log):
                self.log.append(
                    f"(rtbench: {self.noise:,} lines of text in all; "
                    f"the first {len(self.log):,} are kept)"
                )
            if self.damaged > LOG_KEPT:
                self._issue("damaged", f"{self.damaged:,} damaged lines in all (the first listed)")
            self._report_gaps()
            if self._reordered:
                self.records.sort(key=lambda r: r.seq)  # nearly sorted: linear
            self.issues.sort(key=lambda i: i.line or 0)  # gaps join by line
            self._check_complete()
        return ParseResult(self.records, self.issues, self.log)

    def _report_gaps(self) -> None:
        gaps = self._gaps
        if self._reordered:
            # Late records may have filled some holes: find those still open.
            gaps, expected = [], 0
            for seq in sorted(self._first_line):
                if seq > expected:
                    gaps.append((seq, expected, self._first_line[seq]))
                expected = seq + 1
        for seq, expected, line in gaps:
            lost = seq - expected
            after = f"follows {expected - 1}" if expected else "is the first record"
            detail = f"seq {seq} {after}: {lost} record{'s' * (lost != 1)} lost"
            self._issue("gap", detail, line)

    def _check_complete(self) -> None:
        if self._last is None:
            self._issue("truncated", "no records in the stream")
            return
        if self._bye is None:
            seq, line = self._last
            self._issue("truncated", f"no bye: the last record is seq {seq}, line {line}")
            return
        written, arrived = self._bye.body.get("records"), len(self._first_line)
        if written != arrived:
            detail = f"incomplete: bye counts {written!r} records written, {arrived} arrived"
            self._issue("truncated", detail, self._bye.line)


def parse_lines(lines: Iterable[str | bytes], fast: bool = True) -> ParseResult:
    """Parse a whole stream (split on `\\n` only; bytes preferred)."""
    parser = StreamParser(fast)
    for line in lines:
        parser.feed(line)
    return parser.finish()


def parse_file(path: str | os.PathLike[str], fast: bool = True) -> ParseResult:
    """Parse a stream saved to a file, read as bytes."""
    # A large buffer: the default 8 KiB splits a samples line (kilobytes)
    # over several reads.
    with open(path, "rb", buffering=_READ_BUFFER) as f:
        return parse_lines(f, fast)
