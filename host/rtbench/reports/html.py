"""The HTML report: one self-contained file per run or per comparison.

    render_html([run], Path("report.html"))        # a run report
    render_html([a, b], Path("compare.html"))      # a comparison report

Jinja2 templates (rtbench/reports/templates/*.html.j2) with autoescaping on:
every string from a run (labels, details, names: all of it may come from a
stream someone else wrote) is text, never markup, and its control
characters are shown as escapes (`rtbench.text`). Only the SVG charts,
which matplotlib writes with its own escaping, are inserted as markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup

from rtbench.model import Run
from rtbench.reports.render import render
from rtbench.text import printable


def _visible(value: Any) -> Any:
    """A string from a run with its control characters escaped (the SVG
    charts, already markup, pass as they are)."""
    return printable(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def html_report(
    runs: list[Run], indicator: str = "max", members: list[list[Run]] | None = None
) -> str:
    """The report as a string: a run report for one run, a comparison for
    more (`members`: per run, the repetitions it pools)."""
    return render(runs, indicator, "html", members, autoescape=True, finalize=_visible)


def render_html(runs: list[Run], path: Path, indicator: str = "max") -> None:
    path.write_text(html_report(runs, indicator), encoding="utf-8")
