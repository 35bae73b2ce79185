"""End-to-end: RSP-IO through `rtbench run` (the one measuring path), under
a load, and its report beside the published five-scenario figures (dataset
D, marked as other hardware)."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import rtbench

QUICK = ["-c", "RSP-IO", "--set", "RSP-IO.count=20", "--set", "RSP-IO.timeout_ms=20000"]


def test_every_scenario_and_edge_under_a_load(db: Path, agent: Path) -> None:
    r = rtbench("run", *QUICK, "--load", "cpu")
    assert r.returncode in (0, 1), r.stdout + r.stderr  # 1: an OS finding, still measured
    flat = " ".join(r.stdout.split())  # check details wrap at the terminal's width
    for s in "abcde":
        for edge in ("rising", "falling"):
            assert re.search(rf"RSP-IO\s+│ {edge}\[line=pipe,scenario={s}\]\s+│\s+10 ", r.stdout), (
                s,
                edge,
                r.stdout,
            )
        assert re.search(rf"{s}_pipe_edges: .* 20 edges, \d+ answered", flat), r.stdout
    assert re.search(r"pass RSP-IO same_clock", flat), r.stdout
    assert "load=cpu" in r.stdout


def test_report_sets_the_published_figures_beside_the_rising_series(
    db: Path, agent: Path
) -> None:
    r = rtbench("run", *QUICK)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    r = rtbench("report", "latest", "-o", "-")
    assert r.returncode == 0, r.stderr
    for s, published in (("a", "loop only"), ("c", "loop + task + IRQ"), ("e", "IRQ (with")):
        head = re.escape(f"Published, other hardware: rising\\[line=pipe,scenario={s}\\]")
        m = re.search(head + r"(.*?)(?=####|\Z)", r.stdout, re.S)
        assert m, (s, r.stdout)
        assert published in m.group(1) and "[D] Pavlas" in m.group(1)
    # The published figures are of the rising edge only.
    assert "Published, other hardware: falling" not in r.stdout
