"""`rtbench campaign FILE --trend CASE/SERIES`: the campaign's report adds
the trend of one series over its stored runs. Three repetitions of one
short case give a three-point trend, one point per run in the order they
ran (by run id, which follows the start time), in the terminal, on a page
beside the report and under the Markdown report; a series no run has says
so and writes no page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rtbench.experiments.campaign import LABEL_CAMPAIGN
from rtbench.store import Store

pytestmark = pytest.mark.e2e

CAMPAIGN = """
[campaign]
name = "tr"
cases = ["JIT-PER"]
set = ["JIT-PER.period_us=1000", "JIT-PER.cycles=200", "JIT-PER.load_threads=0"]
repetitions = 3

[[target]]
name = "here"
spec = "local"
"""


def _campaign(tmp_path: Path, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "campaign", str(tmp_path / "c.toml"), *args],
        cwd=tmp_path,
        env={**os.environ, "RTBENCH_DB": str(db), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_three_runs_give_a_three_point_trend_in_order(tmp_path: Path, agent: Path) -> None:
    db = tmp_path / "runs.sqlite"
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    r = _campaign(tmp_path, db, "--trend", "JIT-PER/latency")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    with Store(db) as store:
        ids = sorted(run.id for run in store.list_runs({LABEL_CAMPAIGN: "tr"}, newest=None))
    assert len(ids) == 3
    # The terminal table: one row per run, numbered 1..3, in run order.
    rows = re.findall(r"│\s+(\d+)\s+│\s+(\d+)\s+│", r.stdout)
    assert [(int(i), int(run)) for i, run in rows] == list(enumerate(ids, 1)), r.stdout
    page = tmp_path / "tr-trend.html"
    assert page.exists() and "JIT-PER/latency" in page.read_text()
    md = (tmp_path / "tr-report.md").read_text()
    section = md.split("## Trend: ", 1)[1]
    assert section.startswith("JIT-PER/latency over the campaign's 3 runs, by date")
    md_rows = re.findall(r"^\| (\d+) \| (\d+) \|", section, re.M)
    assert [(int(i), int(run)) for i, run in md_rows] == list(enumerate(ids, 1)), section

    # Everything stored: a second call only reports; a series none has.
    page.unlink()
    again = _campaign(tmp_path, db, "--trend", "JIT-PER/nothing")
    assert again.returncode in (0, 1), again.stderr
    assert "no trend: none of the campaign's 3 runs has JIT-PER/nothing" in again.stderr
    assert not page.exists()
