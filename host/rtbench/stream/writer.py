"""Write valid record lines from Python, as the agent would.

Used by the tests, the corpus generator and the parser benchmarks, so that
none of them hand-assembles record lines (and gets a CRC or seq wrong).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from rtbench import STREAM_FORMAT
from rtbench.model import Point, worst_outcome
from rtbench.stream.codec import ENCODING, crc32, encode_zzd

DEFAULT_CHUNK = 512


def record_line(version: int, seq: int, kind: str, body: dict[str, Any]) -> str:
    """One record line, newline included."""
    # ensure_ascii=False: the agent writes UTF-8 as is; json.dumps still
    # escapes quotes, backslashes and control characters, as the agent does.
    text = f"{version} {seq} {kind} " + json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return f"@rtb {text} {crc32(text.encode('utf-8')):08x}\n"


def default_hello(cases: Sequence[str] = ()) -> dict[str, Any]:
    """A plausible `hello` body for a Linux x86_64 target."""
    return {
        "format": STREAM_FORMAT,
        "agent": "rtbench-agent",
        "version": "0.1.0",
        "port": "posix",
        "os": {"sysname": "Linux", "release": "6.1.0-rt", "version": "#1 SMP PREEMPT_RT"},
        "cpu": {"model": "Test CPU", "count": 2},
        "clock": {
            "source": "clock_gettime(CLOCK_MONOTONIC_RAW)",
            "resolution_ns": 1,
            "read_overhead_ns": 21,
        },
        "build": {"compiler": "gcc 12.2.0", "flags": "-O2", "type": "Release", "test_hooks": False},
        "realtime": {"ok": True, "policy": "SCHED_FIFO", "detail": ""},
        "params": {"cpu": 1, "priority": 80, "samples": True, "cases": list(cases)},
    }


def _series_fields(
    case: str,
    series: str,
    point: Point | None,
    unit: str,
    kind: str | None = None,
    attrs: Point | None = None,
) -> dict[str, Any]:
    """`kind` None writes a record as agents before kinds did (no `kind`)."""
    fields: dict[str, Any] = {"case": case, "series": series}
    if point:
        fields["point"] = dict(point)
    fields["unit"] = unit
    if kind is not None:
        fields["kind"] = kind
    if attrs:
        fields["attrs"] = dict(attrs)
    return fields


class StreamWriter:
    """Numbers records from 0 and writes them to `out`, or keeps them in `lines`."""

    def __init__(self, out: TextIO | None = None, version: int = STREAM_FORMAT) -> None:
        self.out = out
        self.version = version
        self.seq = 0  # seq of the next record
        self.lines: list[str] = []
        self._worst = "passed"

    def record(self, kind: str, body: dict[str, Any]) -> str:
        """Write any record (also kinds the grammar does not know)."""
        line = record_line(self.version, self.seq, kind, body)
        self.seq += 1
        if self.out is None:
            self.lines.append(line)
        else:
            self.out.write(line)
        return line

    def hello(self, body: dict[str, Any] | None = None, **overrides: Any) -> str:
        return self.record("hello", {**(body or default_hello()), **overrides})

    def begin(
        self,
        case: str,
        title: str = "",
        params: dict[str, Any] | None = None,
        deadline_ms: int = 3600,
    ) -> str:
        body = {"case": case, "title": title, "params": params or {}, "deadline_ms": deadline_ms}
        return self.record("begin", body)

    def samples(
        self,
        case: str,
        series: str,
        values: Iterable[int],
        point: Point | None = None,
        unit: str = "ns",
        chunk: int = DEFAULT_CHUNK,
        offset: int = 0,
        kind: str | None = None,
        attrs: Point | None = None,
    ) -> list[str]:
        """Write `values` in chunks of `chunk`, the first at index `offset`."""
        seq = list(values)
        head = _series_fields(case, series, point, unit, kind, attrs)
        lines = []
        for start in range(0, len(seq), chunk):
            part = seq[start : start + chunk]
            body = {
                **head,
                "enc": ENCODING,
                "offset": offset + start,
                "count": len(part),
                "data": encode_zzd(part),
            }
            lines.append(self.record("samples", body))
        return lines

    def hist(
        self,
        case: str,
        series: str,
        *,
        layout: dict[str, Any],
        counts: Sequence[tuple[int, int]],
        n: int,
        min: int,
        max: int,
        sum: int,
        underflow: int = 0,
        overflow: int = 0,
        point: Point | None = None,
        unit: str = "ns",
        kind: str | None = None,
        attrs: Point | None = None,
    ) -> str:
        body = {
            **_series_fields(case, series, point, unit, kind, attrs),
            "layout": layout,
            "n": n,
            "min": min,
            "max": max,
            "sum": sum,
            "underflow": underflow,
            "overflow": overflow,
            "counts": [list(c) for c in counts],
        }
        return self.record("hist", body)

    def summary(
        self,
        case: str,
        series: str,
        *,
        n: int,
        min: int | None,
        max: int | None,
        sum: int,
        dropped: int = 0,
        point: Point | None = None,
        unit: str = "ns",
        kind: str | None = None,
        attrs: Point | None = None,
    ) -> str:
        fields = {"n": n, "min": min, "max": max, "sum": sum, "dropped": dropped}
        head = _series_fields(case, series, point, unit, kind, attrs)
        return self.record("summary", {**head, **fields})

    def series(
        self,
        case: str,
        series: str,
        values: Sequence[int],
        point: Point | None = None,
        unit: str = "ns",
        chunk: int = DEFAULT_CHUNK,
        kind: str | None = None,
        attrs: Point | None = None,
    ) -> list[str]:
        """The samples of a series, then its summary computed from them."""
        lines = self.samples(case, series, values, point, unit, chunk, kind=kind, attrs=attrs)
        n = len(values)
        stats = {"min": min(values), "max": max(values)} if n else {"min": None, "max": None}
        lines.append(
            self.summary(
                case,
                series,
                n=n,
                sum=sum(values),
                point=point,
                unit=unit,
                kind=kind,
                attrs=attrs,
                **stats,
            )
        )
        return lines

    def check(self, case: str, name: str, verdict: str, detail: str = "") -> str:
        return self.record(
            "check", {"case": case, "name": name, "verdict": verdict, "detail": detail}
        )

    def warn(self, code: str, detail: str = "", case: str | None = None) -> str:
        body: dict[str, Any] = {"code": code}
        if case is not None:
            body["case"] = case
        body["detail"] = detail
        return self.record("warn", body)

    def end(self, case: str, result: str = "passed", duration_ns: int = 0, reason: str = "") -> str:
        self._worst = worst_outcome([self._worst, result])
        body = {"case": case, "result": result, "duration_ns": duration_ns, "reason": reason}
        return self.record("end", body)

    def bye(self, result: str | None = None) -> str:
        """The last record; `result` defaults to the worst case result written."""
        return self.record("bye", {"result": result or self._worst, "records": self.seq + 1})
