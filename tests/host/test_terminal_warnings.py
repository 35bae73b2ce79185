"""The terminal report's warnings: one that many cases share in the same
words (not_realtime in every case of a normal user's run) is one line naming
its cases, not a line per case; a different one keeps its own line."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from rich.console import Console

from rtbench.model import Run, Warning
from rtbench.reports.terminal import render_run
from rtbench.stream import load_run

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SHARED = "figures measured without real-time priority"


def _warnings_text(run: Run) -> list[str]:
    buf = io.StringIO()
    render_run(run, Console(file=buf, width=300, color_system=None))
    lines = buf.getvalue().splitlines()
    start = lines.index("Warnings") + 1
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("  "))
    return lines[start:end]


def _run(n_cases: int) -> Run:
    """The corpus run with `n_cases` copies of its first case, each warned
    not_realtime in the same words; the first also overran."""
    run = load_run(CORPUS / "good_small.rtb")
    first = run.cases[0]
    run.cases = [
        dataclasses.replace(
            first, case=f"CASE-{i}", warnings=[Warning("not_realtime", SHARED, f"CASE-{i}")]
        )
        for i in range(n_cases)
    ]
    run.cases[0].warnings.append(Warning("overrun", "3 of 10 came late", "CASE-0"))
    run.warnings = [Warning("not_realtime", "SCHED_FIFO refused")]
    return run


def test_a_warning_many_cases_share_is_one_line_naming_them() -> None:
    lines = _warnings_text(_run(5))
    assert lines == [
        "  not_realtime : SCHED_FIFO refused",
        f"  not_realtime CASE-0, CASE-1, CASE-2 and 2 more cases: {SHARED}",
        "  overrun CASE-0: 3 of 10 came late",
    ]


def test_a_few_cases_are_all_named() -> None:
    lines = _warnings_text(_run(2))
    assert f"  not_realtime CASE-0, CASE-1: {SHARED}" in lines and len(lines) == 3
