"""End-to-end: RSP-IO through `rtbench run` (the one measuring path), under
a load, and its report beside the published five-scenario figures (dataset
D, marked as other hardware)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import rtbench

QUICK = ["-c", "RSP-IO", "--set", "RSP-IO.count=20", "--set", "RSP-IO.timeout_ms=20000"]


def test_every_scenario_and_edge_under_a_load(db: Path, agent: Path) -> None:
    r = rtbench("run", *QUICK, "--load", "cpu")
    assert r.returncode in (0, 1), r.stdout + r.stderr  # 1: an OS finding, still measured
    shown = json.loads(rtbench("show", "latest", "--format", "json").stdout)
    assert shown["run"]["labels"] == {"load": "cpu"}
    figures = {(f["name"], f["point"]["scenario"]): f for f in shown["figures"]}
    checks = {c["name"]: c for c in shown["checks"]}
    for s in "abcde":
        for edge in ("rising", "falling"):
            f = figures[(edge, s)]
            assert f["point"]["line"] == "pipe" and f["n"] + lost(checks, s, edge) == 10
            assert f["n"] == 0 or f["min"] > 0
        assert re.search(r"20 edges, \d+ answered", checks[f"{s}_pipe_edges"]["detail"])
    assert checks["same_clock"]["verdict"] == "pass"


def lost(checks: dict[str, dict[str, str]], scenario: str, edge: str) -> int:
    m = re.search(rf"{edge} (\d+)", checks[f"{scenario}_pipe_edges"]["detail"].split("lost")[1])
    assert m
    return int(m.group(1))


def test_report_sets_the_published_figures_beside_the_rising_series(
    db: Path, agent: Path
) -> None:
    r = rtbench("run", *QUICK)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    r = rtbench("report", "latest", "-o", "-")
    assert r.returncode == 0, r.stderr
    # One box for the case; a row per published figure, beside its series.
    m = re.search(r"#### Published, other hardware: RSP-IO\n(.*?)(?=\n#|\Z)", r.stdout, re.S)
    assert m, r.stdout
    box = m.group(1)
    assert "[D] Pavlas" in box.replace("\\", "")
    for s, published in (("a", "loop only"), ("c", "loop + task + IRQ"), ("e", "IRQ (with")):
        rows = [
            row
            for row in box.splitlines()
            if row.startswith(f"| rising\\[line=pipe,scenario={s}\\] |")
        ]
        assert rows and all(published in row and "[D" in row for row in rows), (s, box)
    assert "| falling" not in box
