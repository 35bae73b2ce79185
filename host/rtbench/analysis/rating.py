"""Star rating: 0-5 stars per series by a documented rubric.

The rubric (thresholds per case, the margin, which percentiles) lives in a
TOML file: the package's data/rating.toml unless the user gives their own.
docs/analysis.md states the rubric; the file's comments repeat it.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rtbench.analysis.stats import PERCENTILES, Stats, series_stats
from rtbench.model import CaseResult, Run, Series

# Whatever a rubric file says, a run without real-time priority cannot get
# more: its figures say little about the OS (catalogue: not_realtime).
NOT_REALTIME_MAX_CAP = 2
STARS = {
    5: "hard real-time met out of the box",
    4: "hard real-time met",
    3: "soft real-time only",
    2: "soft real-time problems",
    1: "problematic",
    0: "fails",
}


class RubricError(ValueError):
    """A rubric file that cannot be used, said so that a user can fix it."""


@dataclass(frozen=True)
class Thresholds:
    hard_us: float
    soft_us: float
    fail_us: float


@dataclass
class Rubric:
    thresholds: dict[str, Thresholds]  # pattern -> thresholds; "default" always there
    margin: float = 0.5
    soft_pct: float = 99.9
    problem_pct: float = 99.0
    not_realtime_cap: int = NOT_REALTIME_MAX_CAP
    skip: list[str] = field(default_factory=lambda: ["CAL-*"])
    source: str = "built-in"

    def pattern_for(self, case: str, series: str) -> str:
        """The longest pattern matching "CASE.SERIES" or "CASE" ('default' if none)."""
        names = (f"{case}.{series}", case)
        matches = [
            p
            for p in self.thresholds
            if p != "default" and any(fnmatch.fnmatchcase(n, p) for n in names)
        ]
        return max(matches, key=len) if matches else "default"

    def for_series(self, case: str, series: str) -> Thresholds:
        return self.thresholds[self.pattern_for(case, series)]

    def skips(self, case: str, series: str) -> bool:
        return any(
            fnmatch.fnmatchcase(n, p) for p in self.skip for n in (case, f"{case}.{series}")
        )


@dataclass
class Rating:
    case: str
    series: str  # the series' label ("switch[n=2]"); "" for a whole case or run
    stars: int  # 0..5
    reason: str


# --- loading ----------------------------------------------------------------


def _number(table: dict[str, Any], key: str, where: str, default: float | None) -> float:
    value = table.get(key, default)
    if value is None:
        raise RubricError(f"{where}: {key} is missing")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise RubricError(f"{where}: {key} must be a number >= 0, not {value!r}")
    return float(value)


def _thresholds(raw: dict[str, Any], where: str) -> dict[str, Thresholds]:
    if not isinstance(raw, dict) or not isinstance(raw.get("default"), dict):
        raise RubricError(f"{where}: needs a [thresholds.default] table")
    d = raw["default"]
    base = Thresholds(
        *(_number(d, k, f"{where} [thresholds.default]", None) for k in Thresholds.__annotations__)
    )
    out = {"default": base}
    for pattern, table in raw.items():
        if pattern == "default":
            continue
        w = f"{where} [thresholds.{pattern!r}]"
        if not isinstance(table, dict):
            raise RubricError(f"{w}: must be a table")
        unknown = set(table) - set(Thresholds.__annotations__)
        if unknown:
            raise RubricError(f"{w}: unknown key(s) {', '.join(sorted(unknown))}")
        out[pattern] = Thresholds(
            *(_number(table, k, w, getattr(base, k)) for k in Thresholds.__annotations__)
        )
    return out


def _percentile(doc: dict[str, Any], key: str, default: float, where: str) -> float:
    value = doc.get(key, default)
    if value not in PERCENTILES:
        known = ", ".join(f"{q:g}" for q in PERCENTILES)
        raise RubricError(f"{where}: {key} must be one of {known}, not {value!r}")
    return float(value)


def parse_rubric(doc: dict[str, Any], where: str) -> Rubric:
    if doc.get("version", 1) != 1:
        raise RubricError(f"{where}: version {doc.get('version')!r} is not known (1 is)")
    cap = doc.get("not_realtime_cap", NOT_REALTIME_MAX_CAP)
    if isinstance(cap, bool) or not isinstance(cap, int) or not 0 <= cap <= 5:
        raise RubricError(f"{where}: not_realtime_cap must be an integer 0-5, not {cap!r}")
    skip = doc.get("skip", ["CAL-*"])
    if not isinstance(skip, list) or not all(isinstance(p, str) for p in skip):
        raise RubricError(f"{where}: skip must be a list of patterns")
    margin = _number(doc, "margin", where, 0.5)
    if margin > 1:
        raise RubricError(f"{where}: margin must be at most 1, not {margin}")
    return Rubric(
        thresholds=_thresholds(doc.get("thresholds", {}), where),
        margin=margin,
        soft_pct=_percentile(doc, "soft_pct", 99.9, where),
        problem_pct=_percentile(doc, "problem_pct", 99.0, where),
        not_realtime_cap=min(cap, NOT_REALTIME_MAX_CAP),
        skip=list(skip),
        source=where,
    )


def load_rubric(path: Path | None = None) -> Rubric:
    """The rubric of `path`, or the package's default (data/rating.toml)."""
    if path is None:
        text = resources.files("rtbench").joinpath("data/rating.toml").read_text("utf-8")
        where = "built-in rating.toml"
    else:
        try:
            text = Path(path).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise RubricError(f"cannot read the rubric {path}: {e}") from e
        where = str(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RubricError(f"{where}: not valid TOML: {e}") from e
    return parse_rubric(doc, where)


# --- rating -----------------------------------------------------------------


def _us(ns: float) -> str:
    v = ns / 1000
    return f"{v:.3g} µs" if v < 1000 else f"{v:,.0f} µs"


def stars_for(st: Stats, t: Thresholds, rubric: Rubric) -> tuple[int, str]:
    """Stars of one series' figures, and why."""
    if st.max is None:
        return 0, "no samples"
    mx = float(st.max)
    if mx > t.fail_us * 1000:
        return 0, f"max {_us(mx)} > fail {t.fail_us:g} µs (a stall)"
    if mx <= rubric.margin * t.hard_us * 1000:
        return 5, f"max {_us(mx)} <= {rubric.margin:g} x hard {t.hard_us:g} µs"
    if mx <= t.hard_us * 1000:
        return 4, f"max {_us(mx)} <= hard {t.hard_us:g} µs"
    for stars, q in ((3, rubric.soft_pct), (2, rubric.problem_pct)):
        v = st.pct.get(q)
        if v is not None and v <= t.soft_us * 1000:
            bound = " (bucket bound)" if st.is_bounded(f"p{q:g}") else ""
            return stars, (
                f"max {_us(mx)} > hard {t.hard_us:g} µs; p{q:g} {_us(v)}{bound} "
                f"<= soft {t.soft_us:g} µs"
            )
    p = st.pct.get(rubric.problem_pct)
    shown = _us(p) if p is not None else "unknown"
    return 1, f"p{rubric.problem_pct:g} {shown} > soft {t.soft_us:g} µs"


def _failed_checks(c: CaseResult) -> list[str]:
    return [ch.name for ch in c.checks if ch.verdict == "fail"]


def _rate_series(s: Series, rubric: Rubric) -> Rating:
    t = rubric.for_series(s.case, s.name)
    stars, why = stars_for(series_stats(s), t, rubric)
    return Rating(s.case, s.label, stars, why)


def _rate_case(c: CaseResult, rubric: Rubric) -> list[Rating]:
    if c.outcome in ("unsupported", "error"):
        return []  # could not measure: nothing to say about the OS
    failed = _failed_checks(c)
    if failed or c.outcome == "failed":
        why = f"check(s) failed: {', '.join(failed)}" if failed else "case failed"
        return [Rating(c.case, "", 0, why)]
    return [
        _rate_series(s, rubric)
        for s in c.series
        if is_rated(s) and not rubric.skips(c.case, s.name)
    ]


def is_rated(s: Series) -> bool:
    """Stars are for latencies (rtbench.kinds), in ns, with values."""
    return s.traits.stars and s.unit == "ns" and s.n > 0


NOT_REALTIME_WHY = "no stars: the run had no real-time priority (not_realtime)"


def unrated_because(run: Run) -> str | None:
    """Why a run gets no stars at all (None: it is rated)."""
    return None if run.realtime else NOT_REALTIME_WHY


def rate_run(run: Run, rubric: Rubric | None = None) -> list[Rating]:
    """One rating per rated series (or per failed case), in run order; none
    for a run without real-time priority (`unrated_because` says so): its
    figures say how a time-sharing scheduler treated the test, not what the
    OS can guarantee."""
    rubric = rubric or load_rubric()
    if unrated_because(run) is not None:
        return []
    return [r for c in run.cases for r in _rate_case(c, rubric)]


def overall_rating(ratings: list[Rating]) -> Rating:
    """The worst rating: a system is as real-time as its worst figure."""
    if not ratings:
        return Rating("", "", 0, "nothing rated")
    worst = min(ratings, key=lambda r: r.stars)
    where = f"{worst.case} {worst.series}".strip()
    return Rating("", "", worst.stars, f"{STARS[worst.stars]}: worst is {where}: {worst.reason}")

