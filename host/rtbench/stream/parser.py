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

import binascii
import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pybase64

from rtbench import STREAM_FORMAT
from rtbench.model import StreamIssue
from rtbench.stream.codec import crc32
from rtbench.stream.limits import LOG_KEPT, LOG_LINE
from rtbench.stream.schema import RECORDS, U64_MAX, check_record

IssueKind = Literal["damaged", "gap", "duplicate", "truncated", "order", "version"]

PREFIX = b"@rtb "
_CRC_HEX = re.compile(rb"[0-9a-f]{8}")
_KIND = re.compile(rb"[a-z_]+\Z")
_MAX_DIGITS = 20  # 2**64 has 20 digits
_READ_BUFFER = 1 << 20


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


@dataclass(slots=True)
class Record:
    """One intact record line."""

    seq: int
    kind: str
    body: dict[str, Any]
    line: int
    version: int = STREAM_FORMAT
    # True once the body passed its kind's schema (the parser checks every
    # record it accepts; `assemble` checks those that are not marked).
    checked: bool = field(default=False, compare=False)


@dataclass
class ParseResult:
    records: list[Record] = field(default_factory=list)
    issues: list[StreamIssue] = field(default_factory=list)
    log: list[str] = field(default_factory=list)  # console noise, in order


class _Damaged(Exception):
    """Internal: the reason a record line is skipped."""


def _decimal(field_: bytes, what: str) -> int:
    # Bounded, so that a garbage field cannot hit int()'s digit limit.
    if not field_.isdigit() or len(field_) > _MAX_DIGITS:
        raise _Damaged(f"{what} is not a decimal number: {field_[:20]!r}")
    return int(field_)


def _split_record(rest: bytes) -> tuple[int, int, str, bytes]:
    """Check the CRC of the text after the prefix and split its fields."""
    crc_field = rest[-8:]
    if rest[-9:-8] != b" " or _CRC_HEX.fullmatch(crc_field) is None:
        raise _Damaged("no CRC at the end of the line (line cut short or overwritten?)")
    covered = rest[:-9]
    said, computed = int(crc_field, 16), crc32(covered)
    if said != computed:
        raise _Damaged(f"CRC mismatch: line says {said:08x}, content gives {computed:08x}")
    fields = covered.split(b" ", 3)
    if len(fields) < 4:
        raise _Damaged(f"{len(fields)} fields before the CRC, expected 4 (ver seq kind json)")
    ver_f, seq_f, kind_f, body = fields
    if _KIND.match(kind_f) is None:
        raise _Damaged(f"bad record kind {kind_f[:20]!r}")
    return _decimal(ver_f, "version"), _decimal(seq_f, "seq"), kind_f.decode("ascii"), body


_KINDS = {k.encode(): k for k in RECORDS}


def _split_fast(raw: bytes, start: int, end: int) -> tuple[int, int, str, int] | None:
    """`_split_record` of raw[start:end] without a copy: (version, seq,
    kind, where the body starts), or None for anything irregular (a known
    kind only), which `_split_record` then reads and names."""
    crc_at = end - 8
    if crc_at - 1 <= start or raw[crc_at - 1] != 0x20:
        return None
    if _CRC_HEX.fullmatch(raw, crc_at, end) is None:
        return None
    if int(raw[crc_at:end], 16) != crc32(memoryview(raw)[start : crc_at - 1]):
        return None
    s1 = raw.find(b" ", start, crc_at - 1)
    s2 = raw.find(b" ", s1 + 1, crc_at - 1) if s1 >= 0 else -1
    s3 = raw.find(b" ", s2 + 1, crc_at - 1) if s2 >= 0 else -1
    if s3 < 0:
        return None
    kind = _KINDS.get(raw[s2 + 1 : s3])
    ver_f, seq_f = raw[start:s1], raw[s1 + 1 : s2]
    if kind is None or not (ver_f.isdigit() and seq_f.isdigit()):
        return None
    if len(ver_f) > _MAX_DIGITS or len(seq_f) > _MAX_DIGITS:
        return None
    return int(ver_f), int(seq_f), kind, s3 + 1


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Damaged(f"record is not valid UTF-8 (byte {e.start} of the body)") from None
    try:
        obj = _DECODER.decode(text)
    except (ValueError, RecursionError) as e:  # RecursionError: absurdly deep nesting
        raise _Damaged(f"body is not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise _Damaged(f"body is a JSON {type(obj).__name__}, not an object")
    if "\\u" in text:
        # Escapes may spell half a surrogate pair, which no UTF-8 text (the
        # store, an export, a report) can hold. Rare: the agent escapes only
        # control characters.
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _Damaged(
                "a string holds an unpaired surrogate escape (\\ud800-\\udfff)"
            ) from None
    return obj


def _no_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which are not JSON (RFC 8259).
    raise ValueError(f"{name} is not a JSON number")


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):  # 1e999
        raise ValueError(f"{literal[:20]} does not fit a double")
    return value


# One decoder: json.loads with hooks would build a new one for every record.
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)

# --- the samples fast path
#
# A samples record is nearly all base64 text, and json spends most of its
# time copying that text into a string character by character. The agent
# writes the same layout every time:
#
#     {"case":...,"enc":"zzd-varint-b64","offset":N,"count":M,"data":"B64"}
#
# so the part before "offset" (the series' identity) is decoded and checked
# once per series and kept as a template; each record then costs a match of
# its tail and a few scans of its data at C speed. Anything else (another
# layout, escapes, damage) takes the full path, which says what is wrong:
# the fast path only ever accepts, and only what the full path accepts with
# the same body (tests/host/test_parser_paths.py compares the two).

_SAMPLES_TAIL = re.compile(
    rb'"offset":(0|[1-9][0-9]{0,19}),"count":(0|[1-9][0-9]{0,19}),"data":"'
)
_TEMPLATES = 1024  # series kept at once; a stream of garbage names cannot grow it
_CONTROL = 0x20  # JSON strings hold no raw byte below this
_min_byte = np.minimum.reduce


@dataclass(frozen=True, slots=True)
class _Template:
    body: dict[str, Any]  # the fields before "offset", decoded and checked
    nested: tuple[str, ...]  # its keys holding objects (point, attrs): copied per record


def _template(prefix: bytes) -> _Template | None:
    """The fields before `"offset":` as a checked template, or None.

    `prefix[:-1] + "}"` decoding to a non-empty object proves the prefix is
    the opening of the top-level object with whole members and a comma
    after the last (a prefix ending inside a string or a nested value would
    not close with one brace), so any `"offset":N,"count":M,"data":"B64"}`
    after it is the same object with three more members."""
    if not prefix.endswith(b","):
        return None
    try:
        head = _json_object(prefix[:-1] + b"}")
    except _Damaged:
        return None
    if not head:
        return None
    nested = []
    for key, value in head.items():
        if type(value) is dict:
            if any(type(v) in (dict, list) for v in value.values()):
                return None  # not worth a deep copy per record: the full path
            nested.append(key)
        elif type(value) is list:
            return None
    # The schema checks offset and count for a range and data for a type
    # only (schema.RECORDS["samples"], _samples_rules): a template that
    # passes with these passes with every value the tail pattern allows.
    if check_record("samples", head | {"offset": 0, "count": 0, "data": ""}) is not None:
        return None
    return _Template(head, tuple(nested))


def _plain_string(view: memoryview) -> bool:
    """True when these bytes are a JSON string's value as they stand: no
    quote, no escape, no control byte; non-ASCII goes the full way (its
    UTF-8 is checked there)."""
    try:
        # Base64 text (every chunk the agent writes) is: pybase64's SIMD
        # check of the alphabet is the cheapest proof (the bytes it decodes
        # are dropped; the assembler decodes the chunks in bulk).
        pybase64.b64decode(view, validate=True)
        return True
    except (binascii.Error, ValueError):
        pass
    data = bytes(view)
    if not data.isascii() or b'"' in data or b"\\" in data:
        return False
    return not data or _min_byte(np.frombuffer(data, dtype=np.uint8)) >= _CONTROL


def _samples_body(
    raw: bytes, start: int, end: int, templates: dict[bytes, _Template]
) -> dict[str, Any] | None:
    """The body raw[start:end] of a samples record in the agent's layout,
    checked against the schema; None for anything else (the full path then
    reads it)."""
    if not raw.endswith(b'"}', start, end):
        return None
    at = raw.find(b'"offset":', start, end)
    match = _SAMPLES_TAIL.match(raw, at, end) if at > start else None
    if match is None or match.end() > end - 2:
        return None
    view = memoryview(raw)[match.end() : end - 2]
    if not _plain_string(view):
        return None
    data = str(view, "ascii")
    offset, count = int(match[1]), int(match[2])
    if offset > U64_MAX or count > U64_MAX:
        return None
    prefix = raw[start:at]
    template = templates.get(prefix)
    if template is None:
        template = _template(prefix)
        if template is None:
            return None
        if len(templates) >= _TEMPLATES:
            templates.clear()
        templates[prefix] = template
    out = template.body.copy()
    for key in template.nested:
        out[key] = out[key].copy()
    # Set after the copy: a key repeated in the prefix keeps its first
    # place and takes the last value, as json's own objects do.
    out["offset"], out["count"], out["data"] = offset, count, data
    return out


class StreamParser:
    """Feed lines one at a time; `finish()` when the stream ends.

    `feed` returns the record a line carried when it is accepted, else None
    (noise, damage, or a duplicate). Issues and noise accumulate in `issues`
    and `log`; `records` keeps every accepted record in arrival order.

    `fast=False` reads every record the plain way (json and the schema
    check), the reference the samples fast path is tested against.
    """

    def __init__(self, fast: bool = True) -> None:
        self.records: list[Record] = []
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
        self._templates: dict[bytes, _Template] = {}

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
        split = _split_fast(raw, start, end) if self._fast else None
        try:
            if split is None:
                # The plain way, which also says what is wrong with the line.
                version, seq, kind, body = _split_record(raw[start:end])
                self._check_version(version)
                record = Record(seq, kind, _json_object(body), self.line, version)
            else:
                version, seq, kind, body_at = split
                self._check_version(version)
                fast = None
                if kind == "samples":
                    fast = _samples_body(raw, body_at, end - 9, self._templates)
                if fast is None:
                    body = raw[body_at : end - 9]
                    record = Record(seq, kind, _json_object(body), self.line, version)
                else:  # already checked against the schema
                    record = Record(seq, kind, fast, self.line, version, checked=True)
        except _Damaged as e:
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
            raise _Damaged(f"stream format {version} does not exist")
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
        if not self.records:
            self._issue("truncated", "no records in the stream")
            return
        if self._bye is None:
            last = self.records[-1]
            self._issue("truncated", f"no bye: the last record is seq {last.seq}, line {last.line}")
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
