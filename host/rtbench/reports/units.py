"""How a series' figures are shown: the one place every renderer
(terminal, HTML, Markdown, JSON/CSV, charts) asks for a unit.

What a series is comes from the data model (`Series.kind`, `Series.traits`,
rtbench.kinds); this module only turns it into display units and says
which series are latencies, the figures the summary chart draws.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtbench.kinds import display_unit
from rtbench.model import Series


@dataclass(frozen=True)
class Shown:
    """How a series' figures are displayed."""

    kind: str
    unit: str  # the display unit: "µs", "count", ...
    divisor: float  # stored value / divisor = displayed value
    rated: bool  # a cost to minimise: scored, starred, in the summary chart


def kind(s: Series) -> str:
    return s.kind


def unit_of(unit: str, kind_name: str = "latency") -> Shown:
    """A stored unit as displayed: nanoseconds as µs, anything else as is."""
    divisor, label = display_unit(unit)
    return Shown(kind_name, label, divisor, kind_name == "latency")


def shown(s: Series) -> Shown:
    divisor, label = display_unit(s.unit)
    return Shown(s.kind, label, divisor, s.traits.score)


def is_latency(s: Series) -> bool:
    """A latency in time units: what the one-screen summary chart draws."""
    return s.kind == "latency" and s.unit == "ns"


def fmt_value(value: float | None, unit: str = "ns") -> str:
    """A figure in its display unit: nanoseconds as µs with 3 decimals,
    whole counts whole, anything else in 6 significant digits. Never cut."""
    if value is None or value != value:  # None or NaN
        return "-"
    if unit == "ns":
        return f"{value / 1000:.3f}"
    if unit == "count" and float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.6g}"


def us(ns: float | None, decimals: int = 3, unit: bool = False) -> str:
    """Nanoseconds as µs, the one formatter every table, note and live line
    uses: `decimals` places, " µs" after it when `unit`, "-" for none."""
    if ns is None or ns != ns:  # None or NaN
        return "-"
    return f"{ns / 1000:.{decimals}f}" + (" µs" if unit else "")


# A length of time (a slice, a period, a timestamp) this long or longer
# reads in ms: a 98.6 ms round-robin slice was 98644.997 µs. Latencies stay
# in µs, the unit every latency table and criterion is written in.
MS_FROM_NS = 10_000_000
_LONG_KINDS = ("duration", "period", "timestamp")


def table_unit(s: Series) -> str:
    """The display unit of a series' row in a table: its shown unit, or ms
    for a long length of time in ns."""
    sh = shown(s)
    if s.unit == "ns" and s.kind in _LONG_KINDS and (s.max or 0) >= MS_FROM_NS:
        return "ms"
    return sh.unit


def fmt_in(value: float | None, unit: str, table_unit: str) -> str:
    """fmt_value, in ms when the row's table unit says so."""
    if table_unit == "ms" and unit == "ns" and value is not None and value == value:
        return f"{value / 1e6:.3f}"
    return fmt_value(value, unit)
