"""The comparison report's content: runs side by side, led by what
differs beyond run-to-run noise (significant over runs, and larger than the
spread between repetitions); shared by the HTML and the Markdown
comparison (rtbench.reports.render)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rtbench.analysis.compare import CompareRow, Comparison, compare_runs, matching_test
from rtbench.model import Run
from rtbench.reports import charts
from rtbench.reports.content import (
    ReferenceRow,
    RunView,
    case_references,
    fmt,
    run_name,
    run_view,
)
from rtbench.reports.figures import find_series


@dataclass
class CompareRowView:
    row: CompareRow
    unit: str
    values: list[str]
    ratios: list[str]
    pvalue: str
    chart: str | None = None
    spread: str = "-"  # the widest range among one column's repetitions
    beyond: str = "-"  # yes / no / - (one run per column)


@dataclass
class ComparisonView:
    title: str
    indicator: str
    runs: list[RunView]
    rows: list[CompareRowView]
    machine_diff: list[tuple[str, list[str]]]  # metadata that differs between runs
    # The lead: series that differ beyond run-to-run noise in
    # `lead_indicator` (the indicator asked, or p99 when no test matches
    # it), the largest change first.
    lead_indicator: str = ""
    lead_test: str = ""
    changed: list[CompareRowView] = field(default_factory=list)
    unchanged: int = 0  # tested rows that do not differ beyond the noise
    note: str = ""  # why nothing can be significant (one run per column)
    # Per column, how many runs it pools.
    repetitions: list[int] = field(default_factory=list)
    # Published figures beside the compared cases (other hardware: the
    # study a campaign repeats, e.g. dataset D for three RTOS kernels).
    references: list[ReferenceRow] = field(default_factory=list)
    sources: list[tuple[str, str]] = field(default_factory=list)


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.3f}×"


def _pvalue(p: float | None) -> str:
    return "-" if p is None else (f"{p:.2g}" if p >= 1e-4 else "< 0.0001")


def _beyond(b: bool | None) -> str:
    return "-" if b is None else "yes" if b else "no"


def comparison_view(
    runs: list[Run],
    indicator: str = "max",
    draw: bool = True,
    members: list[list[Run]] | None = None,
) -> ComparisonView:
    """Runs side by side: the indicator per run, its ratio to the first run,
    the test over runs, and (HTML) the histograms overlaid. `members`: per
    run, the repetitions it pools (default: each run is one)."""
    comparison: Comparison = compare_runs(runs, indicator, members)
    names = [run_name(r) for r in runs]
    rows = []
    for row in comparison.rows:
        found = [find_series(r, row.case, row.series, row.point_key) for r in runs]
        # "n" is a count whatever the series measures
        unit = "count" if indicator == "n" else next((s.unit for s in found if s), "ns")
        view = CompareRowView(
            row=row,
            unit=charts.unit_scale(unit)[1],
            values=[
                why if v is None and why else fmt(v, unit)
                for v, why in zip(row.values, row.absent, strict=True)
            ],
            ratios=[_ratio(r) for r in row.ratios],
            pvalue=_pvalue(row.pvalue),
            spread=fmt(row.spread, unit) if row.spread is not None else "-",
            beyond=_beyond(row.beyond_noise),
        )
        named = [(n, s) for n, s in zip(names, found, strict=True) if s is not None]
        if draw and len(named) > 1:  # one run alone is no comparison
            view.chart = charts.overlay_svg(f"{row.case} {row.label}", named)
        rows.append(view)
    views = [run_view(r, details=False, draw=False) for r in runs]
    cmp = ComparisonView(
        title="rtbench comparison: " + " vs ".join(names),
        indicator=comparison.indicator,
        runs=views,
        rows=rows,
        machine_diff=machine_diff(views),
        note=comparison.note,
        repetitions=[len(g) for g in comparison.members],
    )
    _lead(cmp, comparison, runs)
    _references(cmp, runs)
    return cmp


def _references(view: ComparisonView, runs: list[Run]) -> None:
    """Each compared case's published figures once, from the first column
    that ran it (the figures depend on the case and series, not the run)."""
    seen: dict[tuple[str, str, str, str], ReferenceRow] = {}
    cases: set[str] = set()
    for run in runs:
        for c in run.cases:
            if c.case in cases or not c.series:
                continue
            cases.add(c.case)
            for r in case_references(c):
                r.series = f"{c.case} {r.series}"
                seen.setdefault((r.dataset, r.os, r.indicator, r.figures), r)
    view.references = list(seen.values())
    view.sources = sorted({r.dataset: f"{r.source} ({r.hardware})" for r in seen.values()}.items())


def _lead(view: ComparisonView, comparison: Comparison, runs: list[Run]) -> None:
    """What differs beyond run-to-run noise, in the figure the test compared."""
    indicator = comparison.indicator
    if matching_test(indicator, len(runs)) is None:
        indicator = "p99"  # the tail, which a test over runs does compare
        comparison = compare_runs(runs, indicator, comparison.members)
    view.lead_indicator = indicator
    view.lead_test = matching_test(indicator, len(runs)) or ""
    tested = [r for r in comparison.rows if r.pvalue is not None]
    changed = [r for r in tested if r.differs]
    view.unchanged = len(tested) - len(changed)

    def size(r: CompareRow) -> float:
        ratios = [x for x in r.ratios[1:] if x]
        return max((abs(math.log(x)) for x in ratios), default=0.0)

    for row in sorted(changed, key=size, reverse=True):
        view.changed.append(
            CompareRowView(
                row=row,
                unit=charts.unit_scale(row.unit)[1],
                values=[fmt(v, row.unit) for v in row.values],
                ratios=[_ratio(r) for r in row.ratios],
                pvalue=_pvalue(row.pvalue),
                spread=fmt(row.spread, row.unit) if row.spread is not None else "-",
                beyond=_beyond(row.beyond_noise),
            )
        )


def machine_diff(views: list[RunView]) -> list[tuple[str, list[str]]]:
    """The metadata rows (agent hello, host probe) whose values differ
    between the runs: what changed besides the figures."""
    tables = [
        dict([*v.target_rows, *((f"host.{k}", val) for k, val in v.machine_rows)]) for v in views
    ]
    keys = list(dict.fromkeys(k for t in tables for k in t))
    rows = [(k, [t.get(k, "-") for t in tables]) for k in keys]
    return [(k, vals) for k, vals in rows if len(set(vals)) > 1]
