"""Renders a report from the templates: a run report for one run, a
comparison for more; the HTML and Markdown renderers differ only in the
Jinja environment's escaping (rtbench.reports.html / markdown)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rtbench import __version__
from rtbench.analysis.scores import fmt_score
from rtbench.model import Run, point_key
from rtbench.reports.comparison import comparison_view
from rtbench.reports.content import SEVERE, STAT_COLUMNS, fmt, run_view, stars
from rtbench.reports.jinja import environment

# Jinja helpers shared by both renderers.
FILTERS: dict[str, Callable[..., str]] = {
    "fmt": fmt,
    "stars": stars,
    "pointkey": point_key,
    "score": fmt_score,
}


def render(
    runs: list[Run],
    indicator: str,
    ext: str,
    members: list[list[Run]] | None = None,
    **options: Any,
) -> str:
    """A run report for one run, a comparison for more, from the templates
    run.EXT.j2 / compare.EXT.j2; `options` configure the Jinja environment
    (escaping), which is what differs between HTML and Markdown. `members`:
    per run, the repetitions it pools (rtbench.analysis.compare)."""
    if not runs:
        raise ValueError("a report needs at least one run")
    env = environment(**options)
    env.filters.update(FILTERS)
    env.globals.update(version=__version__, severe_codes=SEVERE, columns=STAT_COLUMNS)
    draw = ext == "html"  # charts are for the HTML report only
    if len(runs) == 1:
        view = run_view(runs[0], draw=draw)
        return env.get_template(f"run.{ext}.j2").render(v=view, title=view.title)
    cmp = comparison_view(runs, indicator, draw=draw, members=members)
    return env.get_template(f"compare.{ext}.j2").render(v=cmp, title=cmp.title)
