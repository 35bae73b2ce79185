"""Determinism: how a figure grows with the number of tasks.

A curve is one case's series (same name) over two or more sweep points that
differ only in one integer parameter, e.g. THR-SW `switch` over n = 2, 5,
10, 128, 1000. Its growth per task is the least-squares slope of the mean
(and of the max) against that parameter, in ns per task: a scheduler whose
cost does not depend on the number of tasks has a slope near 0.

Only over a parameter the case declares as a task count (the agent's case
table, `--list` "tasks": THR-SW, SEM-ARC and THR-CTX `n`), and only for
series whose kind has a cost per task (rtbench.kinds: latencies). A slope
over THR-NEW's scenario, SEM-NEW's `used`, a message size or a timer period
would be a number with no meaning: `refusal` says why none is drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rtbench.catalogue import task_count_key
from rtbench.model import Point, Run, Series

TaskKey = Callable[[str], str | None]


@dataclass
class Curve:
    case: str
    series: str
    key: str  # the sweep parameter, e.g. "n"
    xs: list[int]
    means: list[float]
    maxes: list[float]
    slope_mean: float | None  # ns per unit of `key`
    slope_max: float | None
    fixed: Point | None = None  # the other point parameters, held constant


def slope(xs: list[int], ys: list[float]) -> float | None:
    """Least-squares slope of ys against xs; None for fewer than 2 distinct xs."""
    if len(set(xs)) < 2 or len(xs) != len(ys):
        return None
    fit = np.polyfit(np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64), 1)
    return float(fit[0])


def refusal(case: str, key: str, s: Series, tasks: TaskKey = task_count_key) -> str | None:
    """Why no slope of series `s` over point key `key` (None: one is drawn)."""
    declared = tasks(case)
    if key != declared:
        what = f"its task count is {declared!r}" if declared else "it declares no task count"
        return f"{case} {key} is not a task count ({what})"
    if not s.traits.determinism:
        return f"{s.name} is a {s.kind}, not a cost per task"
    return None


def _groups(
    case: str, series: list[Series], tasks: TaskKey
) -> dict[tuple[str, str, str], list[Series]]:
    """(name, key, the rest of the point) -> series varying only in `key`."""
    groups: dict[tuple[str, str, str], list[Series]] = {}
    for s in series:
        for key, value in s.point.items():
            if isinstance(value, bool) or not isinstance(value, int):
                continue
            if refusal(case, key, s, tasks) is not None:
                continue
            rest = ",".join(f"{k}={v}" for k, v in sorted(s.point.items()) if k != key)
            groups.setdefault((s.name, key, rest), []).append(s)
    return groups


def _curve(case: str, name: str, key: str, members: list[Series]) -> Curve | None:
    with_data = [s for s in members if s.n > 0 and s.max is not None]
    usable = sorted(with_data, key=lambda s: int(s.point[key]))
    xs = [int(s.point[key]) for s in usable]
    if len(set(xs)) < 2:
        return None
    means = [float(s.mean) for s in usable if s.mean is not None]
    maxes = [float(s.max) for s in usable if s.max is not None]
    fixed = {k: v for k, v in usable[0].point.items() if k != key}
    return Curve(case, name, key, xs, means, maxes, slope(xs, means), slope(xs, maxes), fixed)


def curves(run: Run, tasks: TaskKey = task_count_key) -> list[Curve]:
    """Every curve of the run over a task count, in run order."""
    out = []
    for c in run.cases:
        for (name, key, _), members in _groups(c.case, c.series, tasks).items():
            curve = _curve(c.case, name, key, members)
            if curve is not None:
                out.append(curve)
    return out
