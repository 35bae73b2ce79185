"""Shared fixtures: the agent builds (release and test) and a helper that
runs the agent and parses what it wrote."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rtbench.build import ensure_agent
from rtbench.model import Run
from rtbench.stream import ParseResult, assemble, parse_lines

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class AgentResult:
    code: int
    stdout: bytes
    stderr: str
    parsed: ParseResult
    run: Run


def _run(
    exe: Path, args: list[str], timeout: float = 120.0, preexec: Callable[[], None] | None = None
) -> AgentResult:
    proc = subprocess.run(
        [str(exe), *args], capture_output=True, timeout=timeout, preexec_fn=preexec, check=False
    )
    parsed = parse_lines(proc.stdout.splitlines())
    return AgentResult(
        proc.returncode,
        proc.stdout,
        proc.stderr.decode("utf-8", "replace"),
        parsed,
        assemble(parsed.records, parsed.issues, parsed.log),
    )


@pytest.fixture(scope="session")
def agent() -> Path:
    return ensure_agent("release")


@pytest.fixture(scope="session")
def test_agent() -> Path:
    return ensure_agent("test")


@pytest.fixture(scope="session")
def run_agent() -> Callable[..., AgentResult]:
    return _run


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("RTBENCH_DB", str(path))
    return path


def pytest_report_header() -> str:
    return f"rtbench tests as uid {os.geteuid()}"
