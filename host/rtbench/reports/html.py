"""The HTML report: one self-contained file per run or per comparison.

    render_html([run], Path("report.html"))        # a run report
    render_html([a, b], Path("compare.html"))      # a comparison report

Jinja2 templates (rtbench/reports/templates/*.html.j2) with autoescaping on:
every string from a run (labels, details, names: all of it may come from a
stream someone else wrote) is text, never markup. Only the SVG charts,
which matplotlib writes with its own escaping, are inserted as markup.
"""

from __future__ import annotations

from pathlib import Path

from rtbench.model import Run
from rtbench.reports.render import render


def html_report(runs: list[Run], indicator: str = "max") -> str:
    """The report as a string: a run report for one run, a comparison for more."""
    return render(runs, indicator, "html", autoescape=True)


def render_html(runs: list[Run], path: Path, indicator: str = "max") -> None:
    path.write_text(html_report(runs, indicator), encoding="utf-8")
