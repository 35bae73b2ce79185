"""Pass/fail criteria on a run's indicators (`rtbench check`).

A criteria file (TOML, docs/analysis.md) maps indicator paths to bounds:

    "THR-SW.switch[n=2].p99" = { max_us = 50 }
    "SEM-SHF.give_to_run.max" = { max_ratio = 1.2 }     # vs --baseline
    "run.stars" = { min = 3 }

A path is CASE.SERIES[POINT].INDICATOR; [POINT] may be left out when the
series has only one point. INDICATOR is one of rtbench.analysis.stats'
INDICATORS, or score / score_max (over T_std), or stars (the series'
rating). `run.stars` and `run.composite_score` are run-wide.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rtbench.analysis.rating import Rubric, overall_rating, rate_run, unrated_because
from rtbench.analysis.scores import composite_score
from rtbench.analysis.stats import INDICATORS, PCT_OF, series_stats
from rtbench.model import Run, Series, point_key, worst_outcome
from rtbench.outcomes import exit_code as outcome_code

TIME_INDICATORS = tuple(i for i in INDICATORS if i != "n")
SERIES_EXTRA = ("score", "score_max", "stars")
RUN_INDICATORS = ("stars", "composite_score")
BOUNDS = ("min", "max", "min_us", "max_us", "min_ns", "max_ns", "min_ratio", "max_ratio")
_PATH = re.compile(r"^(?P<case>[^.\[\]]+)\.(?P<series>[^\[\]]+?)(?:\[(?P<point>[^\]]*)\])?$")

CriterionVerdict = Literal["passed", "failed", "error", "skipped"]


class CriteriaError(ValueError):
    """A criteria file that cannot be used (exit code 2)."""


@dataclass
class Criterion:
    key: str  # the indicator path as written
    case: str  # "run" for run-wide indicators
    series: str
    point_key: str | None  # None: not given
    indicator: str
    bounds: dict[str, float]

    @property
    def relative(self) -> bool:
        return any(b.endswith("_ratio") for b in self.bounds)


@dataclass
class Outcome:
    criterion: Criterion
    verdict: CriterionVerdict
    message: str
    value: float | None = None
    baseline: float | None = None
    notes: list[str] = field(default_factory=list)


# --- parsing ----------------------------------------------------------------


def _canonical_point(text: str, key: str) -> str:
    pairs = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        k, sep, v = part.partition("=")
        if not sep or not k.strip():
            raise CriteriaError(f"{key!r}: point {text!r}: write [key=value,...]")
        pairs[k.strip()] = v.strip()
    return ",".join(f"{k}={pairs[k]}" for k in sorted(pairs))


def parse_path(key: str) -> tuple[str, str, str | None, str]:
    """(case, series, point key or None, indicator) of an indicator path."""
    known = sorted({*INDICATORS, *SERIES_EXTRA}, key=len, reverse=True)
    if key.startswith("run."):
        indicator = key[4:]
        if indicator not in RUN_INDICATORS:
            raise CriteriaError(f"{key!r}: run-wide indicators are {', '.join(RUN_INDICATORS)}")
        return "run", "", None, indicator
    for indicator in known:
        if key.endswith("." + indicator):
            m = _PATH.match(key[: -len(indicator) - 1])
            if m:
                point = m["point"]
                pk = _canonical_point(point, key) if point is not None else None
                return m["case"], m["series"], pk, indicator
            break
    raise CriteriaError(
        f"{key!r} is not an indicator path: write CASE.SERIES[POINT].INDICATOR, "
        f"INDICATOR one of {', '.join((*INDICATORS, *SERIES_EXTRA))}"
    )


def _bounds(key: str, indicator: str, table: Any) -> dict[str, float]:
    if not isinstance(table, dict) or not table:
        raise CriteriaError(f"{key!r}: give a table of bounds, e.g. {{ max_us = 50 }}")
    out = {}
    for name, value in table.items():
        if name not in BOUNDS:
            raise CriteriaError(f"{key!r}: unknown bound {name!r}; known: {', '.join(BOUNDS)}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CriteriaError(f"{key!r}: {name} must be a number, not {value!r}")
        if name.endswith(("_us", "_ns")) and indicator not in TIME_INDICATORS:
            raise CriteriaError(f"{key!r}: {name} is for times; {indicator} takes min/max")
        out[name] = float(value)
    return out


def parse_criteria(doc: dict[str, Any]) -> list[Criterion]:
    criteria = []
    for key, table in doc.items():
        case, series, pk, indicator = parse_path(key)
        criteria.append(Criterion(key, case, series, pk, indicator, _bounds(key, indicator, table)))
    if not criteria:
        raise CriteriaError("the criteria file holds no criterion")
    return criteria


def load_criteria(path: Path) -> list[Criterion]:
    try:
        doc = tomllib.loads(Path(path).read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise CriteriaError(f"cannot read {path}: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise CriteriaError(f"{path}: not valid TOML: {e}") from e
    try:
        return parse_criteria(doc)
    except CriteriaError as e:
        raise CriteriaError(f"{path}: {e}") from e


# --- evaluating -------------------------------------------------------------


class _Missing(Exception):
    pass


def find_series(run: Run, c: Criterion) -> Series:
    case = run.case(c.case)
    if case is None:
        raise _Missing(f"run {run.id} has no case {c.case}")
    named = [s for s in case.series if s.name == c.series]
    if not named:
        have = sorted({s.name for s in case.series})
        raise _Missing(f"{c.case} has no series {c.series!r} (it has: {', '.join(have)})")
    if c.point_key is not None:
        named = [s for s in named if point_key(s.point) == c.point_key]
        if not named:
            raise _Missing(f"{c.case}.{c.series} has no point [{c.point_key}]")
    if len(named) > 1:
        points = ", ".join(f"[{point_key(s.point)}]" for s in named)
        raise _Missing(f"{c.case}.{c.series} has several points ({points}): name one")
    return named[0]


def indicator_value(run: Run, c: Criterion, rubric: Rubric | None = None) -> tuple[float, str]:
    """(value, note) of the criterion's indicator in `run`; _Missing if none."""
    if c.case == "run":
        if c.indicator == "stars":
            return float(overall_rating(rate_run(run, rubric)).stars), ""
        comp = composite_score(run)
        if comp is None:
            raise _Missing(f"run {run.id} has no composite score (no T_std or headline case)")
        return comp, ""
    s = find_series(run, c)
    what = f"{c.case}.{s.label} is a {s.kind}"
    if s.unit != "ns" and any(b.endswith(("_us", "_ns")) for b in c.bounds):
        unit = s.unit or "no unit"
        raise _Missing(f"{what} in {unit}: a time bound does not apply (use min/max)")
    if c.indicator == "stars":
        if not s.traits.stars:
            raise _Missing(f"{what}: only latencies are rated")
        rated = [r for r in rate_run(run, rubric) if r.case == c.case and r.series in ("", s.label)]
        if not rated:
            raise _Missing(f"{c.case}.{s.label} is not rated (see the rubric's skip list)")
        return float(min(r.stars for r in rated)), rated[0].reason
    if c.indicator in ("score", "score_max"):
        if not s.traits.score:
            raise _Missing(f"{what}: only latencies are scored")
        t_std = run.t_std_ns
        figure = s.mean if c.indicator == "score" else s.max
        if not t_std or figure is None:
            raise _Missing(f"run {run.id} has no T_std (CAL-REF) for a score")
        return float(figure) / t_std, ""
    st = series_stats(s, sigma3=c.indicator == "max_3sigma")
    value = st.value(c.indicator)
    if value is None:
        if not s.traits.stats:
            raise _Missing(f"{what}: it has n, min and max only, no {c.indicator}")
        raise _Missing(f"{c.case}.{s.label} has no {c.indicator} (no samples)")
    note = ""
    if st.is_bounded(c.indicator):
        lo, hi = st.pct_range[PCT_OF[c.indicator]]
        note = f"from the histogram: between {lo:g} and {hi:g} ns, the upper bound is used"
    return value, note


def _limit(name: str, bound: float) -> float:
    return bound * 1000 if name.endswith("_us") else bound


def _fmt(value: float, indicator: str, unit: str = "ns") -> str:
    """A figure in its series' unit: a count's max is a count, never µs."""
    if indicator in TIME_INDICATORS and unit == "ns":
        return f"{value / 1000:.3f} µs"
    return f"{value:.4g}" + (f" {unit}" if unit not in ("", "ns") and indicator != "n" else "")


def _unit(run: Run, c: Criterion) -> str:
    if c.case == "run" or c.indicator in ("stars", "score", "score_max"):
        return ""
    try:
        return find_series(run, c).unit
    except _Missing:
        return ""


def _judge(c: Criterion, value: float, base: float | None) -> list[str]:
    """The bounds the value breaks (empty: passed)."""
    broken = []
    for name, bound in c.bounds.items():
        if name.endswith("_ratio"):
            if base is None or base == 0:
                broken.append(f"{name}: no usable baseline value")
                continue
            got, limit = value / base, bound
        else:
            got, limit = value, _limit(name, bound)
        if (name.startswith("min") and got < limit) or (name.startswith("max") and got > limit):
            ratio = f"ratio {got:.3f} breaks " if name.endswith("_ratio") else ""
            broken.append(f"{ratio}{name} = {bound:g}")
    return broken


def evaluate(
    run: Run, criteria: list[Criterion], baseline: Run | None = None, rubric: Rubric | None = None
) -> list[Outcome]:
    return [_evaluate_one(run, c, baseline, rubric) for c in criteria]


def _evaluate_one(run: Run, c: Criterion, baseline: Run | None, rubric: Rubric | None) -> Outcome:
    # docs/outcomes.md: a case that cannot apply on this system (no real-time
    # priority, not implemented by its port) skips its criteria, with why.
    case = run.case(c.case) if c.case != "run" else None
    if case is not None and case.outcome in ("skipped", "unsupported"):
        why = case.reason or case.outcome
        return Outcome(c, "skipped", f"{c.case} is {case.outcome} on this system: {why}")
    not_rated = unrated_because(run) if c.indicator == "stars" else None
    if not_rated is not None:  # stars say nothing without real-time priority
        return Outcome(c, "skipped", not_rated)
    try:
        value, note = indicator_value(run, c, rubric)
    except _Missing as e:
        return Outcome(c, "error", f"unknown indicator: {e}")
    base = None
    if c.relative:
        if baseline is None:
            return Outcome(c, "error", "a _ratio bound needs --baseline RUN", value)
        try:
            base, _ = indicator_value(baseline, c, rubric)
        except _Missing as e:
            return Outcome(c, "error", f"baseline: {e}", value)
    notes = [note] if note else []
    broken = _judge(c, value, base)
    unit = _unit(run, c)
    shown = _fmt(value, c.indicator, unit)
    if base is not None:
        was = _fmt(base, c.indicator, unit)
        shown += f" (baseline {was}, ratio {value / base:.3f})" if base else ""
    if broken:
        return Outcome(c, "failed", f"{shown} breaks " + "; ".join(broken), value, base, notes)
    return Outcome(c, "passed", shown, value, base, notes)


def exit_code(outcomes: list[Outcome]) -> int:
    """0 all passed (skips allowed), 1 some failed, 2 some could not be evaluated."""
    return outcome_code(worst_outcome([o.verdict for o in outcomes] or ["passed"]))
