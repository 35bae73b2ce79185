"""The parser's fast path (`rtbench.stream.parser`): the line's fields
split without copies, and samples records (nearly the whole stream) read
from a per-series template instead of by json. It only ever accepts, and
only what the plain way (`rtbench.stream.record`) accepts with the same
body; anything irregular returns None and the plain way reads it and says
what is wrong (tests/host/test_parser_paths.py compares the two)."""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pybase64

from rtbench.stream.codec import crc32
from rtbench.stream.record import CRC_HEX, MAX_DIGITS, Damaged, json_object
from rtbench.stream.schema import RECORDS, U64_MAX, check_record

_KINDS = {k.encode(): k for k in RECORDS}


def split_fast(raw: bytes, start: int, end: int) -> tuple[int, int, str, int] | None:
    """`record.split_record` of raw[start:end] without a copy: (version, seq,
    kind, where the body starts), or None for anything irregular (a known
    kind only), which `record.split_record` then reads and names."""
    crc_at = end - 8
    if crc_at - 1 <= start or raw[crc_at - 1] != 0x20:
        return None
    if CRC_HEX.fullmatch(raw, crc_at, end) is None:
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
    if len(ver_f) > MAX_DIGITS or len(seq_f) > MAX_DIGITS:
        return None
    return int(ver_f), int(seq_f), kind, s3 + 1


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

_SAMPLES_TAIL = re.compile(rb'"offset":(0|[1-9][0-9]{0,19}),"count":(0|[1-9][0-9]{0,19}),"data":"')
_TEMPLATES = 1024  # series kept at once; a stream of garbage names cannot grow it
_CONTROL = 0x20  # JSON strings hold no raw byte below this
_min_byte = np.minimum.reduce


@dataclass(frozen=True, slots=True)
class Template:
    body: dict[str, Any]  # the fields before "offset", decoded and checked
    nested: tuple[str, ...]  # its keys holding objects (point, attrs): copied per record


def _template(prefix: bytes) -> Template | None:
    """The fields before `"offset":` as a checked template, or None.

    `prefix[:-1] + "}"` decoding to a non-empty object proves the prefix is
    the opening of the top-level object with whole members and a comma
    after the last (a prefix ending inside a string or a nested value would
    not close with one brace), so any `"offset":N,"count":M,"data":"B64"}`
    after it is the same object with three more members."""
    if not prefix.endswith(b","):
        return None
    try:
        head = json_object(prefix[:-1] + b"}")
    except Damaged:
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
    return Template(head, tuple(nested))


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


def samples_body(
    raw: bytes, start: int, end: int, templates: dict[bytes, Template]
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
