"""`rtbench campaign`: a 2 targets x 2 loads matrix of one short case,
interrupted once and resumed, ends with one report holding all four cells."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtbench.experiments.campaign import LABEL_CAMPAIGN, LABEL_CELL
from rtbench.store import Store

pytestmark = pytest.mark.e2e

CAMPAIGN = """
[campaign]
name = "e2e"
cases = ["JIT-PER"]
set = ["JIT-PER.period_us=1000", "JIT-PER.cycles=1500", "JIT-PER.load_threads=0"]
loads = ["none", "cpu"]

[[target]]
name = "first"
spec = "local"

[[target]]
name = "second"
spec = "local"
"""

CELLS = {"first/none/1", "first/cpu/1", "second/none/1", "second/cpu/1"}


def _campaign(tmp_path: Path, db: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rtbench.cli", "campaign", str(tmp_path / "c.toml"), *args],
        cwd=tmp_path,
        env={**os.environ, "RTBENCH_DB": str(db)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stored(db: Path) -> list[tuple[str, str]]:
    if not db.exists():
        return []
    with Store(db) as store:
        return [(r.labels[LABEL_CELL], r.outcome) for r in store.list_runs({LABEL_CAMPAIGN: "e2e"})]


def test_interrupted_campaign_resumes_and_reports_every_cell(tmp_path: Path, agent: Path) -> None:
    del agent  # built once for the session; the campaign's local targets use it
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    db = tmp_path / "runs.sqlite"

    first = _campaign(tmp_path, db)
    deadline = time.monotonic() + 240
    while not _stored(db) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first.poll() is None, "the campaign ended before it could be interrupted"
    first.send_signal(signal.SIGINT)
    _, err1 = first.communicate(timeout=120)
    assert first.returncode == 130, err1
    assert "run the same command again to resume" in err1
    done_before = {cell for cell, outcome in _stored(db) if outcome != "error"}
    assert done_before and done_before < CELLS

    status = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "campaign", "c.toml", "--status"],
        cwd=tmp_path,
        env={**os.environ, "RTBENCH_DB": str(db)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert status.returncode == 0, status.stderr
    assert f"{len(done_before)} of 4 cells stored" in status.stdout

    second = _campaign(tmp_path, db)
    out2, err2 = second.communicate(timeout=600)
    assert second.returncode in (0, 1), err2  # 1: the OS missed a check, still a result
    assert f"resuming: {len(done_before)} of 4 cells are stored already" in err2
    stored = _stored(db)
    findings = [cell for cell, outcome in stored if outcome != "error"]
    # every cell measured exactly once to a result: nothing stored was run again
    assert sorted(findings) == sorted(CELLS)

    report = (tmp_path / "e2e-report.md").read_text()
    for target in ("first", "second"):
        for load in ("none", "cpu"):
            assert f"target={target}, load={load}" in report
    assert (tmp_path / "e2e-report.html").stat().st_size > 0

    # Run from elsewhere (everything is stored: only the report is made):
    # the report goes beside the campaign file, never into the current
    # directory.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "e2e-report.md").unlink()
    third = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "campaign", str(tmp_path / "c.toml")],
        cwd=elsewhere,
        env={**os.environ, "RTBENCH_DB": str(db)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert third.returncode in (0, 1), third.stderr
    assert (tmp_path / "e2e-report.md").exists() and list(elsewhere.iterdir()) == []
    assert "4 columns" in out2
