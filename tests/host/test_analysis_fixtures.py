"""Builders of runs with known values for the analysis tests (no tests here).

Runs are written as the agent would write them (rtbench.stream.StreamWriter:
samples, a log2 histogram, a summary per series) and parsed back, so the
analysis sees exactly what it sees in production.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rtbench.model import Point, Run
from rtbench.stream import StreamWriter, assemble, default_hello, parse_lines

SUB_BITS = 5


def log2_index(v: int, s: int = SUB_BITS) -> int:
    shift = max(0, v.bit_length() - 1 - s)
    return shift * (1 << s) + (v >> shift)


def log2_counts(values: Sequence[int], s: int = SUB_BITS) -> list[tuple[int, int]]:
    idx, counts = np.unique([log2_index(int(v), s) for v in values], return_counts=True)
    return [(int(i), int(c)) for i, c in zip(idx, counts, strict=True)]


@dataclass
class S:
    """One series to write: name, point, values."""

    name: str
    values: Sequence[int]
    point: Point = field(default_factory=dict)
    kind: str | None = None  # None: the record carries none (the fallback applies)
    unit: str = "ns"
    attrs: Point | None = None


@dataclass
class C:
    """One case to write."""

    case: str
    series: list[S]
    result: str = "passed"
    checks: list[tuple[str, str]] = field(default_factory=list)  # (name, verdict)


def write_run(
    cases: list[C], *, realtime: bool = True, samples: bool = True, hist: bool = True
) -> list[str]:
    w = StreamWriter()
    hello = default_hello([c.case for c in cases])
    hello["realtime"] = {"ok": realtime, "policy": "SCHED_FIFO" if realtime else "SCHED_OTHER"}
    w.hello(hello)
    for c in cases:
        w.begin(c.case)
        for s in c.series:
            values = [int(v) for v in s.values]
            tag: dict[str, Any] = {"unit": s.unit, "kind": s.kind, "attrs": s.attrs}
            if samples:
                w.samples(c.case, s.name, values, point=s.point, chunk=4096, **tag)
            if hist and values and min(values) >= 0:
                w.hist(
                    c.case, s.name, layout={"kind": "log2", "sub_bits": SUB_BITS},
                    counts=log2_counts(values), n=len(values), min=min(values),
                    max=max(values), sum=sum(values), point=s.point, **tag,
                )  # fmt: skip
            stats: dict[str, Any] = (
                {"min": min(values), "max": max(values)} if values else {"min": None, "max": None}
            )
            w.summary(c.case, s.name, n=len(values), sum=sum(values), point=s.point, **tag, **stats)
        for name, verdict in c.checks:
            w.check(c.case, name, verdict)
        w.end(c.case, c.result)
    w.bye()
    return w.lines


def build_run(cases: list[C], **kwargs: Any) -> Run:
    parsed = parse_lines([line.encode() for line in write_run(cases, **kwargs)])
    run = assemble(parsed.records, parsed.issues, parsed.log)
    assert not run.issues, run.issues
    return run


def cal_ref(t_std: int = 1000) -> C:
    """A CAL-REF case whose T_std (the mean of t_std) is exactly `t_std`."""
    return C("CAL-REF", [S("t_std", [t_std] * 100)])
