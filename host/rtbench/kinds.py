"""What a series is: its kind, and what the analysis may do with each kind.

The agent declares a series' kind once, where the series is made
(`rtb_series_set_kind`), and the stream carries it (docs/wire-format.md).
Every figure, score, star, fit, histogram and test below asks this table,
never the series' name: a count is never shown as µs, a timestamp never
gets a percentile, a slice length is never rated as a latency.

A stream written before kinds existed (format 1 without `kind`) gets one
from `fallback_kind`: a `count` unit is a count; the series this table
names are what the cases of that time meant; anything else is a latency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

SeriesKind = Literal["latency", "duration", "timestamp", "count", "rate", "period", "ratio"]
KINDS: Final[tuple[SeriesKind, ...]] = get_args(SeriesKind)
DEFAULT_KIND: Final[SeriesKind] = "latency"


@dataclass(frozen=True)
class KindTraits:
    """What is meaningful for one kind of series."""

    unit: str  # the unit the agent writes by default
    stats: bool  # mean, stddev, percentiles (else only n, min, max)
    histogram: bool  # a distribution chart of its values
    test: bool  # a distribution test between runs (Mann-Whitney, Kruskal-Wallis)
    score: bool  # indicator / T_std
    stars: bool  # rated by the rubric
    evt: bool  # worst case beyond the samples
    determinism: bool  # a growth-per-task slope over a task-count parameter
    lower_is_better: bool  # a ratio above 1 is a regression


TRAITS: Final[dict[SeriesKind, KindTraits]] = {
    # The time an OS path took: what rtbench measures, scores and rates.
    "latency": KindTraits("ns", True, True, True, True, True, True, True, True),
    # A length of time that is not a cost to minimise (a time slice, a
    # calibration unit, a signed deviation from a release time).
    "duration": KindTraits("ns", True, True, True, False, False, False, False, False),
    # When something happened (ns since the case began): only its extremes.
    "timestamp": KindTraits("ns", False, False, False, False, False, False, False, False),
    # Events counted (lost, delivered): shown as they are, never as a time.
    "count": KindTraits("count", False, False, False, False, False, False, False, True),
    # Events per second.
    "rate": KindTraits("Hz", True, False, True, False, False, False, False, False),
    # A measured period (a tick, the shortest lossless interrupt period).
    "period": KindTraits("ns", False, False, False, False, False, False, False, True),
    # A dimensionless ratio.
    "ratio": KindTraits("", True, False, True, False, False, False, False, True),
}

_BY_NAME: Final[dict[str, KindTraits]] = {str(k): v for k, v in TRAITS.items()}

# Units whose values are nanoseconds (shown as µs).
TIME_UNITS: Final = frozenset({"ns"})

# Series of format-1 streams written before `kind` existed, by meaning.
LEGACY_KINDS: Final[dict[tuple[str, str], SeriesKind]] = {
    ("CAL-REF", "t_std"): "duration",
    ("CAL-TIMER", "xcpu_fwd"): "duration",
    ("CAL-TIMER", "xcpu_back"): "duration",
    ("CLK-DUR", "gap_start"): "timestamp",
    ("CLK-DUR", "tick_period"): "period",
    ("IRQ-SUS", "losses"): "count",
    ("IRQ-SUS", "delivered"): "count",
    ("IRQ-SUS", "sustained_period"): "period",
    ("IRQ-SUS", "lossy_period"): "period",
    ("JIT-PER", "interval"): "duration",
    ("JIT-PER", "deviation"): "duration",
    ("THR-B-RR", "slice"): "duration",
}


def traits(kind: str) -> KindTraits:
    """The traits of `kind`; an unknown kind (a newer agent's) is treated as
    a timestamp: shown, never scored, rated or tested."""
    return _BY_NAME.get(kind, TRAITS["timestamp"])


def fallback_kind(case: str, series: str, unit: str | None) -> SeriesKind:
    """The kind of a series whose record carried none (docs/wire-format.md)."""
    if unit == "count":
        return "count"
    return LEGACY_KINDS.get((case, series), DEFAULT_KIND)


def fallback_unit(kind: str) -> str:
    return traits(kind).unit


def display_unit(unit: str) -> tuple[float, str]:
    """(divisor, shown unit) of a stored unit: ns are shown as µs."""
    return (1000.0, "µs") if unit in TIME_UNITS else (1.0, unit)
