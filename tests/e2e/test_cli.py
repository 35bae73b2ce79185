"""End-to-end: the `rtbench` command on this machine, as a user runs it.
Each test states the command, the exit code and the patterns expected."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import rtbench
from procs import agents as _agents
from procs import alive as _alive

from rtbench.catalogue import shipped_ports
from rtbench.stream import parse_file

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
FAST = ["-c", "CAL-REF", "-c", "SEM-*", "--set", "SEM-SHF.duration_ms=50"]


def test_run_stores_and_shows(db: Path, tmp_path: Path, agent: Path) -> None:
    saved = tmp_path / "run.rtb"
    r = rtbench("run", *FAST, "--label", "kernel=<b>x</b>", "--save-stream", str(saved))
    assert r.returncode == 0, r.stdout + r.stderr
    for pattern in (
        r"Figures",
        r"CAL-REF\s+│ t_std",
        r"SEM-SHF\s+│ give_to_run",
        r"T_std = \d+\.\d+ µs",
        r"pass\s+SEM-SHF order",
        r"Result: passed",
        r"stored as run 1",
        r"labels: kernel=<b>x</b>",
    ):
        assert re.search(pattern, r.stdout), (pattern, r.stdout)
    assert parse_file(saved).issues == []  # the saved stream is the whole stream
    # piped: a progress line per case on stderr, with an ETA, none on stdout
    cases = sum(rec.kind == "end" for rec in parse_file(saved).records)
    progress = re.findall(
        r"^\[(\d+)/(\d+)\] \S+ \w+ in [\d.]+ s · elapsed \S+ · ETA \S+$", r.stderr, re.M
    )
    assert len(progress) == cases and progress[-1] == (str(cases), str(cases)), r.stderr
    assert "ETA" not in r.stdout

    r = rtbench("runs")
    assert r.returncode == 0 and re.search(r"│ 1 .*passed.*kernel=<b>x</b>", r.stdout), r.stdout
    for ref in ("latest", "1", "-1"):
        r = rtbench("show", ref)
        assert r.returncode == 0 and "SEM-SHF" in r.stdout and "Result: passed" in r.stdout


def test_runs_on_an_empty_store(db: Path) -> None:
    r = rtbench("runs")
    assert r.returncode == 0 and "no runs stored yet" in r.stdout
    r = rtbench("show", "latest")
    assert r.returncode == 2 and "rtbench:" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-c", "NOPE"], r"no case matches 'NOPE'; cases: CAL-REF, CAL-TIMER"),
        (["-c", "THR-SW", "--set", "THR-SW.m=3"], r"THR-SW has no parameter 'm'"),
        (["-c", "THR-SW", "--set", "THR-SW.n=1"], r"THR-SW.n=1 is out of range"),
        (["--suite", "nope"], r"Invalid value for '--suite'"),
        (["--label", "novalue", "-c", "CAL-REF"], r"--label 'novalue': write KEY=VALUE"),
    ],
)
def test_run_rejects_bad_input_before_measuring(
    db: Path, agent: Path, args: list[str], message: str
) -> None:
    r = rtbench("run", *args)
    assert r.returncode == 2
    assert re.search(message, r.stderr), r.stderr
    assert not db.exists() or "no runs" in rtbench("runs").stdout


def test_list_shows_the_catalogue(agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Wide enough that no cell wraps: a column per port.
    monkeypatch.setenv("COLUMNS", "400")
    r = rtbench("list")
    assert r.returncode == 0
    assert re.search(r"THR-SW .*implemented", r.stdout)
    assert re.search(r"RSP-IO .*implemented", r.stdout)
    assert "planned" not in r.stdout  # every catalogue case exists now
    listed = subprocess.run([str(agent), "--list"], capture_output=True, text=True, check=True)
    supported = [line for line in listed.stdout.splitlines() if '"supported":true' in line]
    # A column per port with a shipped case table (no agent built for it).
    ports = shipped_ports()
    assert {"posix", "freertos"} <= set(ports)
    assert re.search(r"ID .*family .*what .*posix .*freertos", r.stdout), r.stdout
    others = sum(c.supported for p, t in ports.items() if p != "posix" for c in t.values())
    host_only = 1  # JIT-AB: rtbench ab
    implemented = len(supported) + others + host_only * len(ports)
    assert len(re.findall(r"implemented", r.stdout)) == implemented
    assert re.search(r"JIT-AB .*implemented \(on the host: rtbench ab\)", r.stdout)
    # The scheduler lock: POSIX has none, FreeRTOS has vTaskSuspendAll.
    assert re.search(r"THR-LOCK .*unsupported \(POSIX.*implemented", r.stdout)


def test_ingest_good_and_damaged_streams(db: Path) -> None:
    r = rtbench("ingest", str(CORPUS / "good_small.rtb"), "--label", "board=x")
    assert r.returncode == 0, r.stdout + r.stderr
    r = rtbench("ingest", str(CORPUS / "damaged_flipped_byte.rtb"))
    assert r.returncode == 2
    assert re.search(r"line 4: damaged: CRC mismatch", r.stdout), r.stdout
    assert "stream incomplete" in r.stdout
    r = rtbench("runs")
    assert len(re.findall(r"│ ingest", r.stdout)) == 2


def test_ingest_refuses_what_it_cannot_read(db: Path, tmp_path: Path) -> None:
    r = rtbench("ingest", str(CORPUS / "damaged_newer_version.rtb"))
    assert r.returncode == 2 and "newer than this rtbench reads" in r.stderr
    assert "Traceback" not in r.stderr
    noise = tmp_path / "console.log"
    noise.write_text("U-Boot 2024.01\nStarting kernel ...\n")
    r = rtbench("ingest", str(noise))
    assert r.returncode == 2 and "no rtbench records" in r.stderr


def test_doctor_explains(agent: Path) -> None:
    r = rtbench("doctor")
    assert r.returncode in (0, 1)
    for name in ("rt-privilege", "rt-throttling", "clocksource", "preemption"):
        assert name in r.stdout


def _wait_for(pred: Callable[[], object], timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _start_long_run() -> tuple[subprocess.Popen[str], set[int]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rtbench.cli",
            "run",
            "-c",
            "THR-SW",
            "--set",
            "THR-SW.duration_ms=4000",
            "--set",
            "THR-SW.n=2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert _wait_for(lambda: _agents(proc.pid)), "the agent never started"
    agents = set(_agents(proc.pid))
    time.sleep(0.5)  # let it measure a little
    return proc, agents


def test_ctrl_c_stores_what_was_measured_and_stops_the_agent(db: Path, agent: Path) -> None:
    proc, agents = _start_long_run()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "interrupted" in err and "interrupted by the user" in out
    assert _wait_for(lambda: not _alive(agents)), "an agent outlived the run"
    r = rtbench("runs")
    assert re.search(r"│ 1 .*error", r.stdout), r.stdout


def test_killed_host_takes_the_agent_with_it(db: Path, agent: Path) -> None:
    proc, agents = _start_long_run()
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _wait_for(lambda: not _alive(agents), timeout=10), "the agent outlived a killed host"
