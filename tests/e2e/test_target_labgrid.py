"""labgrid places as targets, against a real labgrid coordinator and
exporter started here, exporting two places whose consoles are QEMU guests'
serial ports (tests/e2e/lab.py): rtbench acquires a place, copies the agent
over its console, runs cases there, stores them and releases the place;
killed mid-run (SIGINT, SIGKILL) it leaves the place released.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rtbench.journal import journal_dir
from rtbench.store import Store
from rtbench.targets import kernels

from .lab import Lab, start_lab

pytestmark = pytest.mark.e2e

CASES = ["-c", "CAL-REF", "--set", "CAL-REF.repeats=10", "-c", "SYS-CALL",
         "--set", "SYS-CALL.iterations=100"]  # fmt: skip
# Long enough to be killed inside it, whatever the machine's speed.
LONG = ["-c", "THR-SW", "--set", "THR-SW.n=2", "--set", "THR-SW.duration_ms=120000"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    kernel = kernels.fetch("debian-rt")
    running = start_lab(tmp_path_factory.mktemp("lab"), ["rtb-a", "rtb-b"], kernel)
    try:
        yield running
    finally:
        running.close()


def spec(lab: Lab, place: str) -> str:
    # The places are QEMU guests: their runs are flagged emulated.
    return f"labgrid:{place}?coordinator={lab.coordinator}&emulated=yes"


def rtbench(
    db: Path, *args: str, cwd: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rtbench.cli", *args],
        cwd=cwd,
        env={**os.environ, "RTBENCH_DB": str(db)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_run_on_a_place_stores_and_releases(lab: Lab, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    proc = rtbench(db, "run", "--target", spec(lab, "rtb-a"), *CASES)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 1), err
    with Store(db) as store:
        (summary,) = store.list_runs()
        run = store.load(summary.id)
    assert [c.case for c in run.cases] == ["CAL-REF", "SYS-CALL"] and run.complete
    target = run.machine["target"]
    assert target["kind"] == "labgrid" and target["place"] == "rtb-a"
    assert target["emulated"] is True and target["arch"] == "x86_64"
    # The guest's kernel, read by the agent there, not this machine's.
    assert run.hello["os"]["release"] == kernels.fetch("debian-rt").release
    assert lab.acquired_by("rtb-a") is None


def _wait_for(what: str, check: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.3)
    raise AssertionError(f"{what} within {timeout:.0f} s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_killed_rtbench_leaves_the_place_released(
    lab: Lab, tmp_path: Path, sig: signal.Signals
) -> None:
    db = tmp_path / "runs.sqlite"
    proc = rtbench(db, "run", "--target", spec(lab, "rtb-b"), *LONG)
    try:
        # Killed once the place is held and the agent runs on it.
        _wait_for("the place acquired", lambda: lab.acquired_by("rtb-b"), 300)
        _wait_for("the agent started on the place", lambda: _agent_started(db), 300)
        proc.send_signal(sig)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    assert lab.wait_released("rtb-b"), "the place stayed acquired"
    # The place is usable again: another run acquires it.
    again = rtbench(db, "run", "--target", spec(lab, "rtb-b"), *CASES)
    _, err = again.communicate(timeout=600)
    assert again.returncode in (0, 1), err
    assert lab.acquired_by("rtb-b") is None


def _agent_started(db: Path) -> bool:
    """The run's journal holds the agent's hello (the case is under way)."""
    folder = journal_dir(db)
    return folder.is_dir() and any(b" hello " in f.read_bytes() for f in folder.iterdir())
