"""The Markdown report: the HTML report's content as tables, for terminals
and pull requests (charts are left to the HTML report).

    text = render_markdown([run])        # or [a, b, ...] for a comparison

Every value a template prints passes through `md_escape` (the Jinja
`finalize` hook, so no template can forget it): a label or detail cannot
break a table, start a link or emphasis, or inject HTML where the Markdown
is rendered (GitHub renders inline HTML).
"""

from __future__ import annotations

import re
from typing import Any

from rtbench.model import Run
from rtbench.reports.render import render
from rtbench.text import printable

# Backslash escapes (CommonMark: any ASCII punctuation) rather than HTML
# entities, so the text stays readable in a terminal: "\<" cannot open a
# tag, "\&" an entity, "\[" a link, "\|" a table cell.
_PUNCT = re.compile(r"([\\`*\[\]|~<&])")
# Underscores emphasise only at word edges in GitHub Markdown; escaping
# only those keeps series names such as give_to_run readable.
_EDGE_UNDERSCORE = re.compile(r"(?<!\w)_|_(?!\w)")


def md_escape(value: Any) -> str:
    """A value as literal Markdown text on one line."""
    text = "-" if value is None else printable(str(value))
    text = _PUNCT.sub(r"\\\1", text)
    text = _EDGE_UNDERSCORE.sub(r"\\_", text)
    return " ".join(text.split())  # a newline would end a table row


def render_markdown(
    runs: list[Run], indicator: str = "max", members: list[list[Run]] | None = None
) -> str:
    """A run report for one run, a comparison for more (`members`: per run,
    the repetitions it pools)."""
    return render(runs, indicator, "md", members, finalize=md_escape, keep_trailing_newline=True)
