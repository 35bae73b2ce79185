"""One record line of the agent's stream, read the plain way
(docs/wire-format.md): the CRC, the fields, the JSON body. The parser
(`rtbench.stream.parser`) uses these for every line the fast path
(`rtbench.stream.fastpath`) does not take, and they say what is wrong with
a damaged one."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from rtbench import STREAM_FORMAT
from rtbench.stream.codec import crc32

PREFIX = b"@rtb "
CRC_HEX = re.compile(rb"[0-9a-f]{8}")
_KIND = re.compile(rb"[a-z_]+\Z")
MAX_DIGITS = 20  # 2**64 has 20 digits


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


class Damaged(Exception):
    """The reason a record line is skipped (the parser reports it as damaged)."""


def _decimal(field_: bytes, what: str) -> int:
    # Bounded, so that a garbage field cannot hit int()'s digit limit.
    if not field_.isdigit() or len(field_) > MAX_DIGITS:
        raise Damaged(f"{what} is not a decimal number: {field_[:20]!r}")
    return int(field_)


def split_record(rest: bytes) -> tuple[int, int, str, bytes]:
    """Check the CRC of the text after the prefix and split its fields."""
    crc_field = rest[-8:]
    if rest[-9:-8] != b" " or CRC_HEX.fullmatch(crc_field) is None:
        raise Damaged("no CRC at the end of the line (line cut short or overwritten?)")
    covered = rest[:-9]
    said, computed = int(crc_field, 16), crc32(covered)
    if said != computed:
        raise Damaged(f"CRC mismatch: line says {said:08x}, content gives {computed:08x}")
    fields = covered.split(b" ", 3)
    if len(fields) < 4:
        raise Damaged(f"{len(fields)} fields before the CRC, expected 4 (ver seq kind json)")
    ver_f, seq_f, kind_f, body = fields
    if _KIND.match(kind_f) is None:
        raise Damaged(f"bad record kind {kind_f[:20]!r}")
    return _decimal(ver_f, "version"), _decimal(seq_f, "seq"), kind_f.decode("ascii"), body


def json_object(body: bytes) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Damaged(f"record is not valid UTF-8 (byte {e.start} of the body)") from None
    try:
        obj = _DECODER.decode(text)
    except (ValueError, RecursionError) as e:  # RecursionError: absurdly deep nesting
        raise Damaged(f"body is not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise Damaged(f"body is a JSON {type(obj).__name__}, not an object")
    if "\\u" in text:
        # Escapes may spell half a surrogate pair, which no UTF-8 text (the
        # store, an export, a report) can hold. Rare: the agent escapes only
        # control characters.
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise Damaged("a string holds an unpaired surrogate escape (\\ud800-\\udfff)") from None
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
