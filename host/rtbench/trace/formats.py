"""The kernel's own descriptions of its trace data, parsed.

tracefs describes every binary layout it uses in text files: the sub-buffer
(page) header in `events/header_page`, the event header in
`events/header_event`, and each event's payload in
`events/<system>/<event>/format`. Decoding from these files, instead of from
offsets written into this code, keeps the reader right across kernel
versions and architectures (a 32-bit `long`, a field added to an event).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

FieldKind = Literal["int", "str", "data_loc", "rel_loc", "bytes"]

# "field:int irq;	offset:8;	size:4;	signed:1;" (header_page writes "field: u64
# timestamp;" with a space, hence the \s*).
_FIELD = re.compile(
    r"field:\s*(?P<decl>[^;]+);\s*offset:(?P<offset>\d+);\s*size:(?P<size>\d+);"
    r"(?:\s*signed:(?P<signed>\d+);)?"
)


class FormatError(ValueError):
    """A format file this reader does not understand."""


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    size: int
    signed: bool
    kind: FieldKind


@dataclass(frozen=True)
class EventFormat:
    system: str
    name: str
    id: int
    fields: dict[str, Field]

    @property
    def full_name(self) -> str:
        return f"{self.system}:{self.name}"


def _field(decl: str, offset: int, size: int, signed: bool) -> Field:
    decl = decl.strip()
    # The name is the last identifier, before any array brackets.
    m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", decl)
    if m is None:
        raise FormatError(f"cannot read the field declaration {decl!r}")
    name = m.group(1)
    kind: FieldKind
    if decl.startswith("__data_loc"):
        kind = "data_loc"
    elif decl.startswith("__rel_loc"):
        kind = "rel_loc"
    elif m.group(2) is not None:
        kind = "str" if re.match(r"(unsigned\s+|signed\s+)?char\b", decl) else "bytes"
    else:
        kind = "int"
    return Field(name, offset, size, signed, kind)


def parse_format(text: str, system: str = "") -> EventFormat:
    """One `events/<system>/<event>/format` file."""
    name_m = re.search(r"^name:\s*(\S+)", text, re.M)
    id_m = re.search(r"^ID:\s*(\d+)", text, re.M)
    if name_m is None or id_m is None:
        raise FormatError("a format file without name or ID")
    fields: dict[str, Field] = {}
    for m in _FIELD.finditer(text):
        f = _field(m["decl"], int(m["offset"]), int(m["size"]), m["signed"] == "1")
        fields[f.name] = f
    return EventFormat(system, name_m.group(1), int(id_m.group(1)), fields)


@dataclass(frozen=True)
class PageLayout:
    """Where the sub-buffer header puts its fields (events/header_page)."""

    timestamp_offset: int
    timestamp_size: int
    commit_offset: int
    commit_size: int  # sizeof(local_t): the kernel's long, 4 or 8
    data_offset: int
    data_size: int

    @property
    def page_size(self) -> int:
        return self.data_offset + self.data_size


def parse_header_page(text: str) -> PageLayout:
    fields = {
        _field(m["decl"], 0, 0, False).name: (int(m["offset"]), int(m["size"]))
        for m in _FIELD.finditer(text)
    }
    try:
        ts, commit, data = fields["timestamp"], fields["commit"], fields["data"]
    except KeyError as e:
        raise FormatError(f"header_page has no {e.args[0]} field") from None
    if ts[1] != 8 or commit[1] not in (4, 8):
        raise FormatError(f"unexpected header_page sizes: timestamp {ts[1]}, commit {commit[1]}")
    return PageLayout(ts[0], ts[1], commit[0], commit[1], data[0], data[1])


# The compressed event header this reader implements (kernel 2.6.31 on; the
# older format is long gone). header_event is checked against it, so a kernel
# that ever changes it is refused rather than misread.
_HEADER_EVENT_EXPECTED = (
    (r"type_len\s*:\s*5 bits", "type_len 5 bits"),
    (r"time_delta\s*:\s*27 bits", "time_delta 27 bits"),
    (r"padding\s*:\s*type == 29", "padding 29"),
    (r"time_extend\s*:\s*type == 30", "time_extend 30"),
    (r"data max type_len\s*==\s*28", "data max 28"),
)


def check_header_event(text: str) -> bool:
    """True when header_event has the layout this reader decodes; whether
    type 31 is an absolute time stamp (kernel 5.x+) is read from it too."""
    for pattern, what in _HEADER_EVENT_EXPECTED:
        if not re.search(pattern, text):
            raise FormatError(f"header_event is not the known layout (no {what})")
    return bool(re.search(r"time_stamp\s*:\s*type == 31", text))


def decode(
    fmt: EventFormat, data: bytes, byteorder: Literal["little", "big"]
) -> dict[str, int | str]:
    """The payload's fields by name: numbers as int, strings as str; fixed
    non-char arrays are skipped (no event used here has one)."""
    return decoder(fmt, byteorder)(data)


Decoder = Callable[[bytes], dict[str, int | str]]
_INT_CODES = {
    (1, True): "b",
    (1, False): "B",
    (2, True): "h",
    (2, False): "H",
    (4, True): "i",
    (4, False): "I",
    (8, True): "q",
    (8, False): "Q",
}


def decoder(
    fmt: EventFormat,
    byteorder: Literal["little", "big"],
    only: frozenset[str] | None = None,
) -> Decoder:
    """A decoder for one event format: one struct.unpack_from for all fixed
    fields (a trace holds hundreds of thousands of events, and decoding
    field by field was most of the time spent reading one). `only`: decode
    just these fields (a task's name costs more than all its numbers)."""
    codes: list[str] = []
    names: list[str] = []
    strs: list[int] = []
    locs: list[tuple[int, Field]] = []
    flex: list[Field] = []
    at = 0
    for f in sorted(fmt.fields.values(), key=lambda f: f.offset):
        if f.kind == "str" and f.size == 0:
            if only is None or f.name in only:
                flex.append(f)  # a flexible array, running to the end of the payload
            continue
        if f.offset < at or (only is not None and f.name not in only):
            continue  # not wanted, or overlaps the previous field (a union)
        if f.kind == "int" and (f.size, f.signed) in _INT_CODES:
            code = _INT_CODES[(f.size, f.signed)]
        elif f.kind == "str":
            code = f"{f.size}s"
            strs.append(len(names))
        elif f.kind in ("data_loc", "rel_loc") and f.size == 4:
            code = "I"
            locs.append((len(names), f))
        else:
            continue  # not decoded; the padding below keeps later offsets right
        if f.offset > at:
            codes.append(f"{f.offset - at}x")
        codes.append(code)
        names.append(f.name)
        at = f.offset + f.size
    layout = struct.Struct((">" if byteorder == "big" else "<") + "".join(codes))
    size = layout.size

    def decode_one(data: bytes) -> dict[str, int | str]:
        if len(data) < size:
            return _slow_decode(fmt, data, byteorder)
        values: list[Any] = list(layout.unpack_from(data))
        for i in strs:
            values[i] = _cstr(values[i])
        for i, f in locs:
            loc = values[i]
            off, length = loc & 0xFFFF, loc >> 16
            if f.kind == "rel_loc":  # relative to the end of the field itself
                off += f.offset + f.size
            values[i] = _cstr(data[off : off + length])
        out: dict[str, int | str] = dict(zip(names, values, strict=True))
        for f in flex:
            out[f.name] = _cstr(data[f.offset :])
        return out

    return decode_one


def _slow_decode(
    fmt: EventFormat, data: bytes, byteorder: Literal["little", "big"]
) -> dict[str, int | str]:
    """Field by field, for a payload shorter than its format says: only the
    fields wholly inside it."""
    out: dict[str, int | str] = {}
    for f in fmt.fields.values():
        end = f.offset + f.size
        if f.kind == "int":
            if end <= len(data) and f.size in (1, 2, 4, 8):
                out[f.name] = int.from_bytes(data[f.offset : end], byteorder, signed=f.signed)
        elif f.kind == "str":
            raw = data[f.offset : end] if f.size else data[f.offset :]
            out[f.name] = _cstr(raw)
        elif f.kind in ("data_loc", "rel_loc") and end <= len(data):
            loc = int.from_bytes(data[f.offset : end], byteorder)
            off, length = loc & 0xFFFF, loc >> 16
            if f.kind == "rel_loc":
                off += end
            out[f.name] = _cstr(data[off : off + length])
    return out


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")
