"""The schema of each record kind (docs/wire-format.md, "Record kinds").

Every record is checked against its kind's table before anything uses it:
types, ranges, required and optional fields. Extra fields are allowed (a
newer agent may add some); an optional field may be absent or null. A record
that does not conform is reported and skipped, never half-used:

    problem = check_record("hist", body)    # None, or (issue kind, reason)

The kind is `damaged` for a record that breaks the schema, `version` for one
that uses something a newer agent may write (a histogram layout this host
does not know). Kinds not listed here pass: the assembler reports them.

The tables are plain data and the checker a loop over them, so that a
samples record (the most frequent kind) costs a few dictionary lookups.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from rtbench.model import ByeResult, CaseOutcome, Verdict
from rtbench.stream.codec import ENCODING

# Integers on the wire fill int64 and uint64 (sums are 128-bit on the agent).
I64_MIN, I64_MAX, U64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
I128_MIN, I128_MAX = -(1 << 127), (1 << 127) - 1
MAX_SUB_BITS = 63  # 2**s buckets per octave: beyond this a 64-bit layout is meaningless

ProblemKind = Literal["damaged", "version"]
Problem = tuple[ProblemKind, str]


class SchemaError(ValueError):
    """A value that breaks the schema; `kind` is the issue kind to report."""

    def __init__(self, reason: str, kind: ProblemKind = "damaged") -> None:
        super().__init__(reason)
        self.kind = kind


Check = Callable[[Any, str], None]  # raises SchemaError with a reason naming `where`


@dataclass(frozen=True, slots=True)
class Type:
    """What one field holds: a JSON type, for integers a range, and for
    structured values a further check (called only once the type is right)."""

    py: type[Any]
    name: str
    lo: int = 0
    hi: int = 0
    more: Check | None = None


_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
_JSON_TYPES |= {int: "an integer", float: "a number", type(None): "null"}


def _wrong(where: str, value: Any, expected: str) -> SchemaError:
    # Said in JSON's words: the reader looks at the record, not at Python.
    try:
        shown = json.dumps(value)
    except (TypeError, ValueError):
        shown = repr(value)
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    return SchemaError(f"{where!r} must be {expected}, not {kind} {shown:.40}")


def integer(lo: int = I64_MIN, hi: int = U64_MAX) -> Type:
    """A JSON integer in [lo, hi] (by default: anything int64 or uint64 holds)."""
    return Type(int, "an integer", lo, hi)


def conform(t: Type, value: Any, where: str) -> None:
    # type() is, not isinstance: bool is an int subclass, but `true` is no
    # number in JSON.
    if type(value) is not t.py:
        raise _wrong(where, value, t.name)
    if t.py is int and not t.lo <= value <= t.hi:
        raise SchemaError(f"{where!r} = {value} is outside {t.lo}..{t.hi}")
    if t.more is not None:
        t.more(value, where)


U64, WIRE_INT, SUM = integer(0, U64_MAX), integer(), integer(I128_MIN, I128_MAX)
text, boolean, any_object = (
    Type(str, "a string"),
    Type(bool, "true or false"),
    Type(dict, "an object"),
)


def choice(*allowed: str) -> Type:
    def more(value: str, where: str) -> None:
        if value not in allowed:
            raise SchemaError(f"{where!r} is {value!r:.40}, not one of {', '.join(allowed)}")

    return Type(str, "a string", more=more)


def _point(value: dict[str, Any], where: str) -> None:
    for k, v in value.items():
        if type(v) is not str:
            conform(WIRE_INT, v, f"{where}.{k}")


point = Type(dict, "an object", more=_point)  # sweep coordinates: integers and strings

Field = tuple[str, Type, bool]  # key, type, required
Fields = tuple[Field, ...]


def fields(**spec: tuple[Type, bool]) -> Fields:
    return tuple((key, t, required) for key, (t, required) in spec.items())


def obj(spec: Fields) -> Type:
    """An object whose listed fields conform; other keys are allowed."""
    return Type(dict, "an object", more=lambda value, where: _fields(spec, value, f"{where}."))


def _fields(spec: Fields, body: dict[str, Any], prefix: str = "") -> None:
    for key, t, required in spec:
        value: Any = body.get(key)
        # The common case inline: the right scalar type, in range.
        if type(value) is t.py and t.more is None and (t.py is not int or t.lo <= value <= t.hi):
            continue
        if value is None:
            if not required:
                continue
            if key not in body:
                raise SchemaError(f"no {prefix + key!r}")
        conform(t, value, prefix + key)


def req(t: Type) -> tuple[Type, bool]:
    return t, True


def opt(t: Type) -> tuple[Type, bool]:
    return t, False


VERDICTS: tuple[str, ...] = get_args(Verdict)
OUTCOMES: tuple[str, ...] = get_args(CaseOutcome)
RUN_RESULTS: tuple[str, ...] = get_args(ByeResult)


def _kind_name(value: str, where: str) -> None:
    # Any lowercase name: a kind this host does not know (a newer agent's)
    # is kept and shown without statistics (rtbench.kinds.traits).
    if not value or len(value) > 32 or not all("a" <= ch <= "z" or ch == "_" for ch in value):
        raise SchemaError(f"{where!r} is {value!r:.40}, not a kind name ([a-z_]+)")


kind_name = Type(str, "a string", more=_kind_name)

# kind, attrs: optional (records written before the agent declared kinds
# have neither; rtbench.kinds.fallback_kind says what they are).
_SERIES = fields(
    case=req(text),
    series=req(text),
    point=opt(point),
    unit=opt(text),
    kind=opt(kind_name),
    attrs=opt(point),
)

_CYCLES = fields(
    available=opt(boolean), source=opt(text), hz=opt(U64), read_overhead_ns=opt(WIRE_INT)
)
_OS_TEXT = "sysname release version machine preempt preempt_mode cmdline clocksource isolated_cpus"
_HELLO = fields(
    format=opt(U64),
    agent=opt(text),
    version=opt(text),
    port=opt(text),
    run=opt(text),
    os=opt(obj(fields(**{k: opt(text) for k in _OS_TEXT.split()}))),
    cpu=opt(obj(fields(model=opt(text), count=opt(U64)))),
    clock=opt(
        obj(
            fields(
                source=opt(text),
                resolution_ns=opt(WIRE_INT),
                read_overhead_ns=opt(WIRE_INT),
                cycles=opt(obj(_CYCLES)),
                # what stamps measured windows, and why (agent/core/stamp.c)
                stamp=opt(obj(fields(source=opt(text), hz=opt(U64), reason=opt(text)))),
            )
        )
    ),
    build=opt(
        obj(fields(compiler=opt(text), flags=opt(text), type=opt(text), test_hooks=opt(boolean)))
    ),
    port_info=opt(
        obj(
            fields(
                event_timer=opt(text),
                event_raise=opt(text),
                sched_lock=opt(boolean),
                loads=opt(boolean),
            )
        )
    ),
    realtime=opt(obj(fields(ok=opt(boolean), policy=opt(text), detail=opt(text)))),
    params=opt(any_object),
)

_LAYOUTS: dict[str, Fields] = {
    # buckets: a board's array below what a 64-bit value reaches (the values
    # past it are overflow).
    "log2": fields(sub_bits=req(integer(0, MAX_SUB_BITS)), buckets=opt(U64)),
    "linear": fields(lo=req(WIRE_INT), width=req(integer(1, U64_MAX)), buckets=req(U64)),
}


def _layout_kind(value: dict[str, Any], where: str) -> None:
    kind: Any = value.get("kind")
    conform(text, kind, f"{where}.kind")
    spec = _LAYOUTS.get(kind)
    if spec is None:
        reason = f"layout {kind!r:.40} is unknown to this rtbench (newer agent?)"
        raise SchemaError(reason, "version")
    _fields(spec, value, f"{where}.")


def _pairs(value: list[Any], where: str) -> None:
    for pair in value:
        if type(pair) is not list or len(pair) != 2:
            raise _wrong(where, pair, "[index, count] pairs")
        i, c = pair
        # Inline (no call per pair): a histogram has up to thousands of pairs.
        if (
            type(i) is not int
            or type(c) is not int
            or not (0 <= i <= U64_MAX and 0 <= c <= U64_MAX)
        ):
            conform(U64, i, f"{where} index")
            conform(U64, c, f"{where} count")


_PROGRESS_CPU = obj(
    fields(cpu=req(U64), n=req(U64), last=opt(WIRE_INT), max=opt(WIRE_INT), sum=req(WIRE_INT))
)


def _progress_cpus(value: list[Any], where: str) -> None:
    for i, item in enumerate(value):
        conform(_PROGRESS_CPU, item, f"{where}[{i}]")


layout = Type(dict, "an object", more=_layout_kind)
counts = Type(list, "a list", more=_pairs)
_EXACT = fields(n=req(U64), min=opt(WIRE_INT), max=opt(WIRE_INT), sum=req(SUM))

RECORDS: dict[str, Fields] = {
    "hello": _HELLO,
    "begin": fields(
        case=req(text), title=opt(text), params=opt(any_object), deadline_ms=opt(WIRE_INT)
    ),
    "samples": _SERIES + fields(enc=req(text), offset=req(U64), count=req(U64), data=req(text)),
    "hist": _SERIES
    + fields(layout=req(layout))
    + _EXACT
    + fields(underflow=opt(U64), overflow=opt(U64), counts=req(counts)),
    "summary": _SERIES + _EXACT + fields(dropped=opt(U64)),
    "check": fields(
        case=req(text), name=req(text), verdict=req(choice(*VERDICTS)), detail=opt(text)
    ),
    "warn": fields(code=req(text), case=opt(text), detail=opt(text)),
    "end": fields(
        case=req(text),
        result=req(choice(*OUTCOMES)),
        duration_ns=opt(WIRE_INT),
        reason=opt(text),
    ),
    "bye": fields(result=req(choice(*RUN_RESULTS)), records=req(U64)),
    # Interim figures of a long case (per CPU): shown live, never stored.
    "progress": fields(
        case=req(text),
        series=opt(text),
        elapsed_ns=opt(WIRE_INT),
        cpus=req(Type(list, "a list", more=_progress_cpus)),
    ),
    # The sample that stopped a case at --break: the last of its series.
    "break": fields(
        case=req(text),
        series=req(text),
        point=opt(point),
        cpu=opt(U64),  # a CPU index is never below 0
        index=req(U64),
        value=req(WIRE_INT),
        threshold=opt(WIRE_INT),
        at_ns=opt(WIRE_INT),
    ),
}


# --- what types cannot say


def _extremes(body: dict[str, Any]) -> None:
    """min and max are absent only when n is 0, and never cross."""
    lo, hi = body.get("min"), body.get("max")
    if body["n"] and (lo is None or hi is None):
        raise _wrong("min" if lo is None else "max", None, "an integer when n > 0")
    if lo is not None and hi is not None and lo > hi:
        raise SchemaError(f"min {lo} is above max {hi}")


def _samples_rules(body: dict[str, Any]) -> None:
    if body["enc"] != ENCODING:
        raise SchemaError(f"unknown sample encoding {body['enc']!r:.40}")


def bucket_limit(layout: dict[str, Any]) -> int:
    """One past the highest bucket index the (checked) layout can give a
    64-bit value: an index beyond it is damage, and bucket arithmetic on it
    could shift by billions of bits."""
    if layout["kind"] == "linear":
        return int(layout["buckets"])
    s = int(layout["sub_bits"])
    # v < 2**64: shift <= 63 - s and the mantissa < 2**(s+1).
    reach = max(0, 63 - s) * (1 << s) + (2 << s)
    return min(reach, int(layout["buckets"])) if "buckets" in layout else reach


def _hist_rules(body: dict[str, Any]) -> None:
    _extremes(body)
    limit = bucket_limit(body["layout"])
    last, total = -1, 0
    for index, count in body["counts"]:
        if index <= last:
            raise SchemaError(f"counts are not ascending by index ({index} after {last})")
        last = index
        total += count
    if last >= limit:
        raise SchemaError(f"bucket index {last} is beyond the layout's {limit} buckets")
    total += body.get("underflow") or 0
    total += body.get("overflow") or 0
    if total != body["n"]:
        raise SchemaError(f"n is {body['n']}, but counts, underflow and overflow add up to {total}")


def _summary_rules(body: dict[str, Any]) -> None:
    _extremes(body)
    if (body.get("dropped") or 0) > body["n"]:
        raise SchemaError(f"dropped {body['dropped']} is above n {body['n']}")


_RULES: dict[str, Callable[[dict[str, Any]], None]] = {
    "samples": _samples_rules,
    "hist": _hist_rules,
    "summary": _summary_rules,
}


_HIST_ONLY = RECORDS["hist"][len(_SERIES) :]


def check_hist(hist: dict[str, Any]) -> Problem | None:
    """The histogram part of a `hist` record (layout, counts, n, min, max,
    sum, underflow, overflow): what the analysis checks again before it
    buckets a stored histogram."""
    try:
        _fields(_HIST_ONLY, hist)
        _hist_rules(hist)
    except SchemaError as e:
        return e.kind, str(e)
    return None


def check_record(kind: str, body: dict[str, Any]) -> Problem | None:
    """None when the record conforms to its kind's schema (or the kind is
    not one this host knows), else (issue kind, reason)."""
    fields = RECORDS.get(kind)
    if fields is None:
        return None
    if type(body) is not dict:  # only from a caller of assemble(); the parser checks this
        return "damaged", f"the body is {type(body).__name__}, not an object"
    try:
        _fields(fields, body)
        rules = _RULES.get(kind)
        if rules is not None:
            rules(body)
    except SchemaError as e:
        return e.kind, str(e)
    return None
