"""A run from an emulated target is flagged on every figure and says what
its figures compare with, in every renderer; a hardware run is not."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from rtbench.model import Run
from rtbench.reports.html import html_report
from rtbench.reports.markdown import render_markdown
from rtbench.reports.terminal import render_run
from rtbench.stream import load_run

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _run(emulated: bool) -> Run:
    run = load_run(CORPUS / "good_small.rtb")
    run.machine = {"target": {"kind": "qemu", "emulator": "qemu", "accel": "tcg",
                              "emulated": emulated}}  # fmt: skip
    return run


def _terminal(run: Run) -> str:
    buf = io.StringIO()
    render_run(run, Console(file=buf, width=200, color_system=None))
    return buf.getvalue()


@pytest.mark.parametrize("emulated", [True, False])
def test_emulated_runs_say_so_everywhere(emulated: bool) -> None:
    run = _run(emulated)
    assert (run.emulated == "qemu tcg") is emulated
    texts = {
        "terminal": _terminal(run),
        "markdown": render_markdown([run]),
        "html": html_report([run]),
    }
    for where, text in texts.items():
        assert ("EMULATED" in text) is emulated, where
        assert ("same emulator" in text) is emulated, where
    figures = sum(len(c.series) for c in run.cases)
    assert figures > 0
    # the terminal's figures table flags each figure
    assert texts["terminal"].count("emulated") >= (figures if emulated else 0)
    if not emulated:
        assert "emulated" not in texts["terminal"]


def test_a_comparison_flags_only_the_emulated_side() -> None:
    a, b = _run(False), _run(True)
    a.id, b.id = 1, 2
    md = render_markdown([a, b])
    assert md.count("**EMULATED") == 1


def test_emulated_against_hardware_has_no_ratio_or_test_and_says_why() -> None:
    from rtbench.analysis.compare import compare_runs

    hw = [_run(False) for _ in range(3)]
    emu = [_run(True) for _ in range(3)]
    cmp = compare_runs([hw[0], emu[0]], "p99", members=[hw, emu])
    assert cmp.note.startswith("runs of different kinds (hardware and qemu tcg)")
    assert cmp.tested == 0 and cmp.rows
    for row in cmp.rows:
        assert row.pvalue is None and row.test == "none: runs of different kinds"
        assert row.ratios == [None, None] and row.beyond_noise is None
        assert all(v is not None for v in row.values)  # the figures, side by side
    page = html_report([hw[0], emu[0]], members=[hw, emu])
    assert "No test:</strong> runs of different kinds" in page
    # Negative control: the same emulator on both sides is tested.
    same = compare_runs([emu[0], emu[1]], "p99", members=[emu[:2], [emu[2], _run(True)]])
    assert not same.note.startswith("runs of different kinds")
