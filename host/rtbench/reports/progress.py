"""Progress of a run while it measures: which case, how far, and when it
will end.

The estimate of each case comes from its plan, as the agent budgets it:
`cycles` or `count` times `period_us` (at most `duration_ms` where that
caps it), else `duration_ms`, times the sweep's points, else a second;
the agent's own defaults fill what the suite does not set. A target that
takes a while to start (a QEMU guest's boot) adds the start-up it took
last time (remembered in the user's cache per target). The ETA scales
what remains by how the finished cases compared with their estimates (a
slow machine makes every case slower), so it improves as the run goes.
On a terminal: a rich progress bar; piped (CI logs): one line per
finished case, on stderr, so that stdout keeps the results.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import platformdirs
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from rtbench.reports import live

FALLBACK_S = 1.0  # a case with no duration in its plan: a count of iterations
OVERHEAD_S = 0.3  # starting threads, emitting the series


class Planned(Protocol):
    case: str
    params: dict[str, str]


def _values(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def expected_s(params: Mapping[str, str], defaults: Sequence[Mapping[str, Any]] = ()) -> float:
    """Seconds a case is expected to take with these parameters."""
    merged: dict[str, list[float]] = {}
    for p in defaults:
        default = p.get("default")
        if isinstance(default, list) and default:
            merged[str(p["name"])] = [float(v) for v in default]
    for name, text in params.items():
        try:
            merged[name] = _values(text)
        except ValueError:
            continue
    points = math.prod(len(v) for k, v in merged.items() if len(v) > 1) or 1

    def one(name: str) -> float | None:
        v = merged.get(name)
        return v[0] if v else None

    ms = one("duration_ms")
    period = one("period_us")
    for count in ("cycles", "count"):
        if (c := one(count)) is not None and period is not None:
            planned = c * period / 1e6
            if ms:  # a time cap (0: none)
                planned = min(planned, ms / 1000)
            return planned * points + OVERHEAD_S
    if ms is not None:
        return ms / 1000 * points + OVERHEAD_S
    return FALLBACK_S * points


def _startups() -> Path:
    return platformdirs.user_cache_path("rtbench") / "startup.json"


def last_startup_s(target: str) -> float | None:
    """How long `target` took to answer last time (None: never seen)."""
    try:
        value = json.loads(_startups().read_text()).get(target)
    except (OSError, ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def remember_startup(target: str, seconds: float) -> None:
    """Best effort: an estimate is no reason to fail a run."""
    path = _startups()
    try:
        known = json.loads(path.read_text()) if path.is_file() else {}
        if not isinstance(known, dict):
            known = {}
        known[target] = round(seconds, 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{time.monotonic_ns()}.tmp")
        tmp.write_text(json.dumps(known))
        tmp.replace(path)
    except (OSError, ValueError):
        pass


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class RunProgress:
    """Follows the agent's records (`on_record`) and shows progress on
    `console`: a live bar on a terminal, else a line per case."""

    def __init__(
        self,
        plan: Sequence[Planned],
        defaults: Mapping[str, Sequence[Any]],
        console: Console,
        planned_s: float | None = None,
        target: str | None = None,
    ):
        self.names = [p.case for p in plan]
        self.estimates = [expected_s(p.params, defaults.get(p.case, ())) for p in plan]
        self.console = console
        self.started = time.monotonic()
        self.case_started = self.started
        self.done = 0
        self.spent_estimate = 0.0
        self.live = console.is_terminal
        self.bar: Progress | None = None
        self.task: Any = None
        self.planned_s = planned_s  # a soak run's --duration, for "12 s of 60 s"
        self.heading = "starting the agent"
        self.target = target
        self.startup_s = last_startup_s(target) if target else None
        self.measuring_since: float | None = None  # the agent's hello

    @property
    def total(self) -> float:
        return sum(self.estimates)

    def eta_s(self, now: float | None = None) -> float:
        """Seconds left: the remaining estimates, scaled by how long the
        finished cases took against theirs."""
        now = time.monotonic() if now is None else now
        elapsed = now - (self.measuring_since or self.started)
        left = sum(self.estimates[self.done :])
        if self.spent_estimate > 0:
            left *= min(max(elapsed / self.spent_estimate, 0.5), 5.0)
        return left

    def __enter__(self) -> RunProgress:
        if self.live:
            self.bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", markup=False),  # case ids are text
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.__enter__()
            self.task = self.bar.add_task("starting the agent", total=self.total)
        else:
            source = "the plan"
            total = self.total
            if self.startup_s:
                source += f" and {self.target}'s last start-up, {self.startup_s:.0f} s"
                total += self.startup_s
            self.console.print(
                f"rtbench: {len(self.names)} cases, about {_clock(total)} (from {source}); "
                "starting the agent",
                highlight=False,
                markup=False,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)

    def begin(self, case: str) -> None:
        # No clock here: the agent writes a case's records when it can
        # (never inside a measured section), so a case's time runs from
        # the previous case's end.
        if self.bar is not None:
            i = min(self.done, len(self.names) - 1)
            self.heading = f"{case} · case {i + 1}/{len(self.names)}"
            self.bar.update(self.task, description=self.heading)

    def end(self, case: str, result: str) -> None:
        now = time.monotonic()
        estimate = self.estimates[self.done] if self.done < len(self.estimates) else 0.0
        self.done += 1
        self.spent_estimate += estimate
        took, self.case_started = now - self.case_started, now
        if self.bar is not None:
            self.bar.update(self.task, completed=self.spent_estimate, description=self.heading)
            return
        self.console.print(
            f"[{self.done}/{len(self.names)}] {case} {result} in {took:.1f} s"
            f" · elapsed {_clock(now - self.started)} · ETA {_clock(self.eta_s(now))}",
            highlight=False,
            markup=False,
        )

    def answered(self) -> None:
        """The agent's hello: the target's start-up (a boot) is over."""
        now = time.monotonic()
        self.measuring_since = self.case_started = now
        took = now - self.started
        if self.target and (took >= 2.0 or self.startup_s is not None):
            remember_startup(self.target, took)  # quick starters leave no file
        if self.bar is None and took >= 2.0:
            self.console.print(
                f"rtbench: the agent answered after {took:.1f} s (the target's start-up)",
                highlight=False,
                markup=False,
            )

    def on_record(self, kind: str, body: Mapping[str, Any]) -> None:
        if kind == "hello":
            self.answered()
        elif kind == "begin":
            self.begin(str(body.get("case", "")))
        elif kind == "end":
            self.end(str(body.get("case", "")), str(body.get("result", "")))
        elif kind == "progress":
            self.figures(live.snapshot(dict(body)))

    def figures(self, snap: live.Snapshot) -> None:
        """A long case's interim per-CPU figures: rows under the bar on a
        terminal, one line per record when piped."""
        if self.bar is not None:
            rows = live.table_lines(snap, self.planned_s)
            self.bar.update(self.task, description="\n".join([self.heading, *rows]))
        else:
            self.console.print(
                live.one_line(snap, self.planned_s), highlight=False, markup=False, soft_wrap=True
            )
