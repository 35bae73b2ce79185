"""Scores: each time figure in units of the machine's calibration workload.

score = indicator / T_std, T_std being the mean of CAL-REF's `t_std` series
(a fixed chain of 2x2 matrix multiplications), so that a figure measured on
a fast machine and one measured on a slow machine can be set side by side.
Lower is better. Every time series gets two: its mean and its max.

The composite (docs/analysis.md) is the geometric mean of the mean-scores
of the headline indicators of the published mixed-load method: task
switching (THR-SW), task preemption (THR-PRE), interrupt response (IRQ-RSP)
and semaphore shuffling (SEM-SHF), over those the run has. A geometric mean
weighs a halving of any one of them the same, whatever its size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from rtbench import catalogue
from rtbench.model import Point, Run, Series

TIME_UNIT = "ns"

Indicator = Literal["mean", "max"]


@dataclass
class Score:
    case: str
    series: str
    point: Point
    indicator: Indicator
    value_ns: float
    score: float | None  # None when the run has no T_std


# Significant digits a score is shown with: on a slow board T_std is large
# (24 ms on the emulated Cortex-M3) and scores are small (0.0004), which a
# fixed three decimals showed as a column of 0.000.
SCORE_DIGITS = 4


def fmt_score(score: float | None) -> str:
    """A score with SCORE_DIGITS significant digits, never in exponent
    form and never rounded to 0: 0.0004141, 0.3812, 12.41, 1234."""
    if score is None or not math.isfinite(score):
        return "-"
    if score == 0:
        return "0"
    decimals = max(0, SCORE_DIGITS - 1 - math.floor(math.log10(abs(score))))
    return f"{score:.{decimals}f}"


def is_scored(s: Series) -> bool:
    """A latency in ns with values: the only kind a score means something for
    (rtbench.kinds: a count, a timestamp or a slice length is no cost)."""
    return s.traits.score and s.unit == TIME_UNIT and s.n > 0


is_time_series = is_scored  # the older name


def _scores_of(s: Series, t_std: float | None) -> list[Score]:
    out = []
    figures: list[tuple[Indicator, float | None]] = [("mean", s.mean), ("max", s.max)]
    for indicator, value in figures:
        if value is None:
            continue
        sc = value / t_std if t_std else None
        out.append(Score(s.case, s.name, dict(s.point), indicator, float(value), sc))
    return out


def indicator_scores(run: Run, table: catalogue.Table | None = None) -> list[Score]:
    """Mean- and max-score of every time series of the run, in run order, but
    for the cases its agent's table declares `unscored` (CAL-REF *is* the
    unit; `table`: default the run's own)."""
    t_std = run.t_std_ns
    unscored = catalogue.unscored_cases(catalogue.run_table(run) if table is None else table)
    return [
        sc
        for c in run.cases
        if c.case not in unscored
        for s in c.series
        if is_scored(s)
        for sc in _scores_of(s, t_std)
    ]


def _point_order(s: Series) -> tuple[tuple[str, tuple[int, float, str]], ...]:
    """A total order of sweep points whatever their values' types (a stream
    may mix `{"n": 2}` and `{"n": "ten"}`): numbers by value, before text."""

    def value(v: object) -> tuple[int, float, str]:
        if isinstance(v, int | float) and not isinstance(v, bool):
            return (0, float(v), "")
        return (1, 0.0, str(v))

    return tuple((k, value(v)) for k, v in sorted(s.point.items()))


def headline_series(run: Run, table: catalogue.Table | None = None) -> list[Series]:
    """One series per headline case present (the agent's `headline` trait,
    in its order; `table`: default the run's own): its first-named time
    series at its smallest sweep point (THR-SW: the fewest threads)."""
    chosen = []
    table = catalogue.run_table(run) if table is None else table
    for case_id in catalogue.headline_cases(table):
        c = run.case(case_id)
        timed = [s for s in c.series if is_scored(s)] if c else []
        if not timed:
            continue
        first = [s for s in timed if s.name == timed[0].name]
        chosen.append(min(first, key=_point_order))
    return chosen


def composite_parts(run: Run) -> list[Score]:
    """The mean-scores the composite is made of."""
    t_std = run.t_std_ns
    return [sc for s in headline_series(run) for sc in _scores_of(s, t_std)[:1]]


def geometric_mean(values: list[float]) -> float | None:
    if not values or any(v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def composite_score(run: Run) -> float | None:
    """Geometric mean of the headline mean-scores; None without T_std or
    without any headline indicator. Lower is better. Only comparable between
    runs that have the same headline cases (composite_parts says which)."""
    parts = composite_parts(run)
    scores = [p.score for p in parts if p.score is not None]
    if not scores or len(scores) != len(parts):
        return None
    return geometric_mean(scores)
