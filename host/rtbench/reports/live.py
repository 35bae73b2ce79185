"""Live figures of a long case, from the agent's `progress` records: per
CPU the latest, average and largest latency so far, as cyclictest shows
them (Act/Avg/Max). `rtbench run` shows them in its live display on a
terminal and as one line per record when its output is piped.

The figures are interim: the case's own summary and histogram, written at
its end, are what is stored and reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rtbench.reports.units import us


@dataclass(frozen=True)
class CpuFigures:
    cpu: int
    n: int
    last: int | None  # ns
    avg: float | None
    max: int | None


@dataclass(frozen=True)
class Snapshot:
    case: str
    series: str
    elapsed_ns: int
    cpus: tuple[CpuFigures, ...]


def snapshot(body: dict[str, Any]) -> Snapshot:
    """A `progress` record's body (already checked against its schema)."""
    cpus = []
    for c in body.get("cpus", []):
        n = int(c["n"])
        cpus.append(
            CpuFigures(
                cpu=int(c["cpu"]),
                n=n,
                last=c.get("last"),
                avg=int(c["sum"]) / n if n else None,
                max=c.get("max"),
            )
        )
    return Snapshot(
        case=str(body.get("case", "")),
        series=str(body.get("series") or "latency"),
        elapsed_ns=int(body.get("elapsed_ns") or 0),
        cpus=tuple(cpus),
    )


def _us(ns: float | None) -> str:
    return us(ns, 1)


def _elapsed(snap: Snapshot, planned_s: float | None) -> str:
    done = f"{snap.elapsed_ns / 1e9:.0f} s"
    return f"{done} of {planned_s:.0f} s" if planned_s else done


def one_line(snap: Snapshot, planned_s: float | None = None) -> str:
    """`JIT-PER 12 s of 60 s latency µs: CPU0 cur 12.3 avg 15.2 max 45.1 n 1200 | CPU1 ...`"""
    parts = [
        f"CPU{c.cpu} cur {_us(c.last)} avg {_us(c.avg)} max {_us(c.max)} n {c.n}" for c in snap.cpus
    ]
    return f"{snap.case} {_elapsed(snap, planned_s)} {snap.series} µs: " + " | ".join(parts)


def table_lines(snap: Snapshot, planned_s: float | None = None) -> list[str]:
    """One line per CPU, aligned, for a live display."""
    lines = [f"{snap.case} {_elapsed(snap, planned_s)}, {snap.series} in µs"]
    lines.append(f"  {'CPU':>4} {'cur':>10} {'avg':>10} {'max':>10} {'n':>12}")
    for c in snap.cpus:
        lines.append(f"  {c.cpu:>4} {_us(c.last):>10} {_us(c.avg):>10} {_us(c.max):>10} {c.n:>12}")
    return lines
