"""Without real-time privilege the run still completes, every result is
flagged not_realtime and the summary says so plainly. Tested for real: the
agent runs as `nobody` with RLIMIT_RTPRIO 0."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import drop_privileges, public_copy
from rich.console import Console

from rtbench.reports.terminal import render_run
from rtbench.session import collect
from rtbench.transports import LocalTransport

CASES = [
    "CAL-TIMER:reads=2000:rounds=100",
    "CAL-REF:repeats=20",
    "THR-SW:n=2,5:duration_ms=50",
    "SEM-SHF:duration_ms=50",
]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs root")


@pytest.fixture(scope="module")
def public_agent(agent: Path) -> Iterator[Path]:
    with public_copy(agent) as exe:
        yield exe


def test_unprivileged_run_completes_flagged(public_agent: Path, tmp_path: Path) -> None:
    saved = tmp_path / "nort.rtb"
    with saved.open("wb") as sink:
        run = collect(LocalTransport(public_agent, preexec=drop_privileges), CASES, raw_sink=sink)
    assert run.complete, run.issues
    assert not run.realtime
    assert "SCHED_FIFO refused" in run.hello["realtime"]["detail"]
    assert run.hello["realtime"]["policy"] == "SCHED_OTHER"
    # the run measured everything it was asked to...
    assert [c.case for c in run.cases] == ["CAL-TIMER", "CAL-REF", "THR-SW", "SEM-SHF"]
    for case in run.cases:
        assert case.outcome in ("passed", "failed"), (case.case, case.reason)
        assert case.series and all(s.n > 0 for s in case.series)
        # ...and every case carries the flag
        assert any(w.code == "not_realtime" for w in case.warnings), case.case
    assert any(w.code == "not_realtime" for w in run.warnings)

    console = Console(record=True, width=200)
    render_run(run, console)
    text = console.export_text()
    assert "NOT REAL-TIME" in text and "rtbench doctor" in text
    rows = [line for line in text.splitlines() if "│" in line and "ns" not in line]
    figure_rows = [r for r in rows if any(c in r for c in ("CAL-", "THR-", "SEM-"))]
    assert figure_rows and all("not_realtime" in r for r in figure_rows)

    # the same, stored and shown through the CLI
    env = {**os.environ, "RTBENCH_DB": str(tmp_path / "db.sqlite")}
    r = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "ingest", str(saved)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert "NOT REAL-TIME" in r.stdout, r.stdout + r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "runs"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert "│ no" in r.stdout
