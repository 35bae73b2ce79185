"""A figure over a sequence of runs: the long-term view OSADL's latency farm
keeps per system (the max, and the p99, of one series across kernel
versions or months).

A trend is computed from stored runs that share labels; a point is one
series of one run. Points are ordered by when the run started or by the
kernel release it measured, in version order (6.1.9 before 6.1.10).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from rtbench.analysis.stats import series_stats
from rtbench.model import Run, Series, point_key

Order = Literal["date", "kernel"]
ORDERS: tuple[Order, ...] = ("date", "kernel")

_SPEC = re.compile(r"^(?P<case>[A-Z0-9][A-Z0-9-]*)/(?P<name>[^\[\]/]+)(?:\[(?P<point>[^\]]*)\])?$")


class TrendError(ValueError):
    """A series spec that cannot be read, or nothing to draw."""


@dataclass(frozen=True)
class SeriesSpec:
    case: str
    name: str
    point: str | None  # point_key text to match, None: every point

    def matches(self, s: Series) -> bool:
        if s.case != self.case or s.name != self.name:
            return False
        return self.point is None or point_key(s.point) == self.point

    def __str__(self) -> str:
        return f"{self.case}/{self.name}" + (f"[{self.point}]" if self.point is not None else "")


def parse_spec(text: str) -> SeriesSpec:
    """'JIT-PER/latency', 'JIT-PER/latency[cpu=1]' -> a SeriesSpec."""
    m = _SPEC.match(text.strip())
    if not m:
        raise TrendError(
            f"--series {text!r}: write CASE/SERIES or CASE/SERIES[point], "
            "e.g. JIT-PER/latency or JIT-PER/latency[cpu=1]"
        )
    return SeriesSpec(m["case"], m["name"], m["point"])


@dataclass(frozen=True)
class TrendPoint:
    run_id: int | None
    started_at: str
    kernel: str
    target: str
    series: str  # the series' label with its point, e.g. "latency[cpu=1]"
    unit: str
    n: int
    p99: float | None
    max: float | None
    emulated: bool


def version_key(release: str) -> tuple[tuple[int, int | str], ...]:
    """'6.1.0-28-rt-amd64' sorts by its numbers, then by its words."""
    return tuple(
        (0, int(p)) if p.isdigit() else (1, p) for p in re.findall(r"\d+|[^\d.\-+~]+", release)
    )


def points(runs: Iterable[Run], spec: SeriesSpec, order: Order = "date") -> list[TrendPoint]:
    """One point per matching series per run, in the order asked for."""
    found: list[TrendPoint] = []
    for run in runs:
        case = run.case(spec.case)
        if case is None:
            continue
        for s in case.series:
            if not spec.matches(s):
                continue
            st = series_stats(s)
            found.append(
                TrendPoint(
                    run_id=run.id,
                    started_at=run.started_at,
                    kernel=run.system.release,
                    target=run.target,
                    series=s.label,
                    unit=s.unit,
                    n=st.n,
                    p99=st.pct.get(99.0),
                    max=None if st.max is None else float(st.max),
                    emulated=run.emulated is not None,
                )
            )
    if order == "kernel":
        found.sort(key=lambda p: (version_key(p.kernel), p.started_at, p.series))
    else:
        found.sort(key=lambda p: (p.started_at, p.run_id or 0, p.series))
    return found
