"""What a report says, computed once for both renderers (HTML, Markdown).

The figures come from rtbench.analysis and rtbench.reference; this module
only selects, formats and arranges them (and draws the charts when asked),
so that the HTML and the Markdown report cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rtbench import catalogue
from rtbench.analysis.determinism import Curve, curves
from rtbench.analysis.evt import EvtResult, worst_case
from rtbench.analysis.rating import Rating, overall_rating, rate_run
from rtbench.analysis.scores import Score, composite_score, fmt_score, indicator_scores
from rtbench.analysis.stats import PCT_NAMES, Stats, case_stats, computed_once, has_all_samples
from rtbench.model import CaseResult, Check, Run, Series, StreamIssue, Warning, point_key
from rtbench.reference import ReferenceFigure, figures_for
from rtbench.reports import charts
from rtbench.reports.figures import series_flags
from rtbench.reports.jitter import JitterTable, jitter_series, jitter_table
from rtbench.reports.summary import Summary, summarize
from rtbench.reports.units import fmt_value, is_latency, unit_of

STAT_COLUMNS = ("n", "min", "mean", "stddev", *PCT_NAMES.values(), "max")
# Warning codes shown in red: the figures they concern say little or nothing.
SEVERE = frozenset({"not_realtime", "overrun", "buffer_full", "lost_wakeups", "incomplete"})
EVT_PROBABILITIES = (1e-6, 1e-9)


def fmt(value: float | None, unit: str = "ns") -> str:
    """A figure in its display unit (`rtbench.reports.units`)."""
    return fmt_value(value, unit)


def stars(n: int) -> str:
    n = max(0, min(5, n))
    return "★" * n + "☆" * (5 - n)


def run_name(run: Run) -> str:
    """How a run is named in titles and legends: its id and labels."""
    if run.id is None and run.labels:  # e.g. a campaign's pooled column
        return ", ".join(f"{k}={v}" for k, v in run.labels.items())
    base = f"run {run.id}" if run.id is not None else "run (not stored)"
    if run.labels:
        base += " (" + ", ".join(f"{k}={v}" for k, v in run.labels.items()) + ")"
    return base


def flatten(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Nested metadata as (dotted key, text) rows, in the order given."""
    if isinstance(obj, dict):
        rows: list[tuple[str, str]] = []
        for k, v in obj.items():
            rows += flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return rows
    if isinstance(obj, list | tuple):
        text = ", ".join(str(x) for x in obj) if obj else "(none)"
    else:
        text = "-" if obj is None else str(obj)
    return [(prefix, text)]


@dataclass
class ReferenceRow:
    """The published figures of one system for one indicator, e.g. QNX's
    avg and max of "THR-P-SLS switch, 2 threads"."""

    dataset: str
    source: str
    hardware: str
    os: str
    indicator: str
    figures: str  # "avg 0.6 us · max 6.3 us"
    series: str = ""  # the run's series it stands beside (one box per case)


@dataclass
class SeriesView:
    series: Series
    stats: Stats
    cells: dict[str, str]  # STAT_COLUMNS -> text
    unit: str  # display unit
    flags: list[str]
    rating: Rating | None
    scores: list[Score]
    references: list[ReferenceRow]
    evt: EvtResult | None
    histogram: str | None = None  # inline SVG
    timeseries: str | None = None


@dataclass
class CurveView:
    curve: Curve
    unit: str  # the series' unit
    shown: str  # its display unit
    slope_mean: str
    slope_max: str
    svg: str | None = None


@dataclass
class CaseView:
    result: CaseResult
    params: str
    duration: str
    series: list[SeriesView]
    ratings: list[Rating]
    curves: list[CurveView]
    jitter: list[JitterTable]
    checks: list[Check]
    warnings: list[Warning]
    references: list[ReferenceRow] = field(default_factory=list)  # one box per case
    sources: list[tuple[str, str]] = field(default_factory=list)  # (dataset, publication)
    charts: list[str] = field(default_factory=list)  # a histogram per series name
    timeseries: str | None = None  # of the case's worst latency series
    headline: str = ""  # the worst max of the case, for its collapsed line
    histogram_only: bool = False  # some series kept no raw samples


@dataclass
class ScoreRow:
    """A series' mean and max with their scores, side by side."""

    case: str
    series: str  # label, e.g. switch[n=2]
    figures: dict[str, tuple[str, str]]  # indicator -> (value µs, score)


@dataclass
class RunView:
    run: Run
    name: str
    title: str
    not_realtime: str | None  # why, when the agent ran without RT priority
    warnings: list[Warning]  # run-wide and per case, each once
    issues: list[StreamIssue]
    target_rows: list[tuple[str, str]]  # the agent's hello
    machine_rows: list[tuple[str, str]]  # the host's probe
    ratings: list[Rating]
    overall: Rating | None
    scores: list[ScoreRow]
    composite: float | None
    t_std: float | None
    checks: dict[str, int]  # verdict -> count
    cases: list[CaseView] = field(default_factory=list)
    summary: Summary | None = None  # the first screen


def _unique(warnings: Iterable[Warning]) -> list[Warning]:
    seen: set[tuple[str, str, str | None]] = set()
    kept = []
    for w in warnings:
        key = (w.code, w.detail, w.case)
        if key not in seen:
            seen.add(key)
            kept.append(w)
    return kept


def _cells(s: Series, st: Stats) -> dict[str, str]:
    """Figures as text; "≤" marks a percentile known only to its histogram
    bucket (its upper bound), "≈" a stddev from bucket midpoints."""
    cells = {
        "n": str(st.n),
        "min": fmt(st.min, s.unit),
        "mean": fmt(st.mean, s.unit),
        "stddev": ("" if st.stddev_exact else "≈") + fmt(st.stddev, s.unit),
        "max": fmt(st.max, s.unit),
    }
    for q, name in PCT_NAMES.items():
        v = st.pct.get(q)
        bound = "≤" if st.is_bounded(name) else ""
        cells[name] = bound + fmt(v, s.unit) if v is not None else "-"
    return cells


def _flags(run: Run, s: Series, st: Stats) -> list[str]:
    flags = [sentence for _, sentence in series_flags(run, s, st)]
    if st.filtered_max is not None:
        approx = " (≈, from the histogram: not every sample was kept)"
        flags.append(
            f"3σ filter: max {fmt(st.filtered_max, s.unit)} without "
            f"{st.filtered_out} gross errors (raw max above)"
            + (approx if st.filtered_approx else "")
        )
    return flags


def _series_view(
    run: Run, c: CaseResult, s: Series, scores: list[Score], ratings: list[Rating], draw: bool
) -> SeriesView:
    st = case_stats(s, catalogue.run_table(run))
    evt = None
    if s.traits.evt and has_all_samples(s):
        assert s.chunked is not None
        evt = worst_case(s.chunked, EVT_PROBABILITIES)
    view = SeriesView(
        series=s,
        stats=st,
        cells=_cells(s, st),
        unit=charts.unit_scale(s.unit)[1],
        flags=_flags(run, s, st),
        rating=next((r for r in ratings if r.case == c.case and r.series == s.label), None),
        scores=[x for x in scores if (x.case, x.series, x.point) == (c.case, s.name, s.point)],
        references=[],  # one box per case: CaseView.references
        evt=evt,
    )
    del draw  # the charts are per case (`_case_view`), not per series
    return view


def _slope(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    return f"{v:+.1f} ns per task" if unit == "ns" else f"{v:+.4g} {unit} per task"


def _curve_view(cv: Curve, unit: str, draw: bool) -> CurveView:
    view = CurveView(
        cv,
        unit,
        charts.unit_scale(unit)[1],
        _slope(cv.slope_mean, unit),
        _slope(cv.slope_max, unit),
    )
    if draw:
        view.svg = charts.curve_svg(
            f"{cv.case} {cv.series}: mean and max against {cv.key}",
            cv.key,
            cv.xs,
            [("mean", cv.means), ("max", cv.maxes)],
            unit,
        )
    return view


def _case_view(
    run: Run,
    c: CaseResult,
    scores: list[Score],
    ratings: list[Rating],
    case_curves: list[Curve],
    draw: bool,
) -> CaseView:
    units = {s.name: s.unit for s in c.series}
    shown = jitter_series(c, catalogue.run_table(run))
    jitter = [t for t in (jitter_table(s) for s in shown) if t is not None]
    view = CaseView(
        result=c,
        params=", ".join(f"{k}={v}" for k, v in c.params.items()),
        duration=f"{c.duration_ns / 1e9:.3f} s",
        series=[_series_view(run, c, s, scores, ratings, draw) for s in c.series],
        # a rating of the case as a whole (a failed check), not of a series
        ratings=[r for r in ratings if r.case == c.case and not r.series],
        curves=[_curve_view(cv, units.get(cv.series, "ns"), draw) for cv in case_curves],
        jitter=jitter,
        checks=list(c.checks),
        warnings=_unique(c.warnings),
        references=case_references(c, jitter_shown=bool(jitter)),
        histogram_only=any(s.chunked is None and s.n for s in c.series),
    )
    sources = {r.dataset: f"{r.source} ({r.hardware})" for r in view.references}
    view.sources = sorted(sources.items())
    drawable = [s for s in c.series if s.traits.histogram and s.n]
    latencies = [s for s in drawable if is_latency(s)]
    worst = max(latencies or drawable, key=lambda s: s.max or 0, default=None)
    if worst is not None:
        view.headline = (
            f"max {fmt_value(worst.max, worst.unit)} {unit_of(worst.unit).unit} ({worst.label})"
        )
    if draw:
        names = list(dict.fromkeys(s.name for s in drawable))
        found = (charts.group_svg(c.case, n, [s for s in drawable if s.name == n]) for n in names)
        view.charts = [svg for svg in found if svg]
        if worst is not None:
            view.timeseries = charts.timeseries_svg(worst)
    return view


def case_references(c: CaseResult, jitter_shown: bool = False) -> list[ReferenceRow]:
    """The published figures beside a case's series, each row once with the
    series it stands beside (IRQ-SUS's twelve points share one row); the
    published jitter bins are left to the jitter table when it is shown."""
    rows: dict[tuple[str, str, str, str], ReferenceRow] = {}
    for s in c.series:
        for r in reference_rows(figures_for(c.case, s.name, dict(s.point))):
            if jitter_shown and r.indicator.startswith("jitter "):
                continue
            key = (r.dataset, r.os, r.indicator, r.figures)
            if key in rows:
                rows[key].series += f", {s.label}"
            else:
                r.series = s.label
                rows[key] = r
    return list(rows.values())


def reference_rows(figures: list[ReferenceFigure]) -> list[ReferenceRow]:
    rows: dict[tuple[str, str, str], ReferenceRow] = {}
    for f in figures:
        unit = "" if f.unit in ("score", f.stat) else f" {f.unit}"
        value = f"{f.stat} {f.published or f'{f.value:g}'}{unit}"
        key = (f.dataset, f.os, f.indicator)
        if key in rows:
            rows[key].figures += f" · {value}"
        else:
            rows[key] = ReferenceRow(f.dataset, f.source, f.hardware, f.os, f.indicator, value)
    return list(rows.values())


def _score_text(sc: float | None) -> str:
    return fmt_score(sc)


def score_rows(scores: list[Score]) -> list[ScoreRow]:
    rows: dict[tuple[str, str, str], ScoreRow] = {}
    for sc in scores:
        pk = point_key(sc.point)
        label = f"{sc.series}[{pk}]" if pk else sc.series
        row = rows.setdefault((sc.case, sc.series, pk), ScoreRow(sc.case, label, {}))
        row.figures[sc.indicator] = (fmt(sc.value_ns), _score_text(sc.score))
    return list(rows.values())


def _not_realtime(run: Run) -> str | None:
    if run.realtime:
        return None
    rt = run.hello.get("realtime")
    detail = rt.get("detail", "") if isinstance(rt, dict) else ""
    return str(detail) or "the agent ran without real-time priority"


def run_view(run: Run, *, details: bool = True, draw: bool = True) -> RunView:
    """Everything a report shows of one run; `details` adds the per-case
    sections, `draw` their charts (the Markdown report has none)."""
    with computed_once():  # the summary, ratings and cases share each series' figures
        return _run_view(run, details, draw)


def _run_view(run: Run, details: bool, draw: bool) -> RunView:
    ratings = rate_run(run)
    scores = indicator_scores(run)
    checks: dict[str, int] = {}
    for ch in (ch for c in run.cases for ch in c.checks):
        checks[ch.verdict] = checks.get(ch.verdict, 0) + 1
    view = RunView(
        run=run,
        name=run_name(run),
        title=f"rtbench report: {run_name(run)}",
        not_realtime=_not_realtime(run),
        warnings=_unique(run.all_warnings()),
        issues=list(run.issues),
        target_rows=flatten(run.hello),
        machine_rows=flatten(run.machine),
        ratings=ratings,
        overall=overall_rating(ratings) if ratings else None,
        scores=score_rows(scores),
        composite=composite_score(run),
        t_std=run.t_std_ns,
        checks=checks,
        summary=summarize(run, draw=draw),
    )
    if details:
        all_curves = curves(run)
        view.cases = [
            _case_view(
                run, c, scores, ratings, [cv for cv in all_curves if cv.case == c.case], draw
            )
            for c in run.cases
        ]
    return view
