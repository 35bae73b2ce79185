"""End-to-end: the commands against a PostgreSQL store, as a lab uses them:
`rtbench --db postgresql://... run`, a second host's run through
RTBENCH_DB, then `runs`, `compare` and `report` reading both back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import free_port
from pgserver import PostgresServer

from rtbench.experiments.campaign import LABEL_CAMPAIGN, LABEL_CELL
from rtbench.store import Store

from .test_analysis_cli import stream
from .test_cli import FAST

pytestmark = pytest.mark.e2e


def rtbench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def test_run_runs_compare_report_on_postgresql(
    pg_server: PostgresServer, tmp_path: Path, agent: Path
) -> None:
    del agent  # built once for the session; `run` uses it
    url = pg_server.url(pg_server.create_database(), tcp=True)
    # Journals of a database store live in the user's data directory.
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("RTBENCH_DB", None)

    r = rtbench("--db", url, "run", *FAST, "--label", "host=one", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"stored as run 1 in {url}" in r.stdout, r.stdout
    # Another host: the store through RTBENCH_DB, a run whose CAL-REF is known.
    r = rtbench(
        "ingest", str(stream(tmp_path / "two.rtb", 1.5, 2)), "--label", "host=two",
        env={**env, "RTBENCH_DB": url},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr

    r = rtbench("--db", url, "runs", env=env)
    assert r.returncode == 0, r.stderr
    assert re.search(r"│ 2 .*host=two", r.stdout) and re.search(r"│ 1 .*host=one", r.stdout)
    r = rtbench("--db", url, "runs", "--label", "host=one", env=env)
    assert "host=one" in r.stdout and "host=two" not in r.stdout

    r = rtbench("--db", url, "compare", "1", "2", "--indicator", "p50", env=env)
    assert r.returncode == 0, r.stderr
    assert re.search(r"CAL-REF\s+│ t_std", r.stdout) and "#2/#1" in r.stdout, r.stdout
    report = tmp_path / "report.md"
    r = rtbench("--db", url, "report", "1", "2", "-o", str(report), env=env)
    assert r.returncode == 0, r.stderr
    assert "CAL-REF" in report.read_text()

    # The run the agent measured is whole in the database; no journal is left.
    with Store(url) as store:
        run = store.load(1)
        assert run.labels == {"host": "one"} and run.complete
        assert {c.case for c in run.cases} >= {"CAL-REF", "SEM-SHF"}
    journals = list((tmp_path / "data").rglob("*.journal"))
    assert journals == []


def test_a_server_out_of_reach_is_said_before_measuring(tmp_path: Path) -> None:
    url = f"postgresql://rtbench:secret@127.0.0.1:{free_port()}/gone"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    r = rtbench("--db", url, "run", "-c", "CAL-REF", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cannot open the store postgresql://rtbench@127.0.0.1" in r.stderr, r.stderr
    assert "secret" not in r.stdout + r.stderr
    r = rtbench("--db", "mysql://db/x", "runs", env=env)
    assert r.returncode == 2 and "an SQLite file path or a postgresql:// URL" in r.stderr


CAMPAIGN = """
[campaign]
name = "pg"
cases = ["CAL-REF"]
loads = ["none"]

[[target]]
name = "first"
spec = "local"

[[target]]
name = "second"
spec = "local"
"""


def test_a_campaign_into_postgresql(pg_server: PostgresServer, tmp_path: Path, agent: Path) -> None:
    del agent
    url = pg_server.url(pg_server.create_database())
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "RTBENCH_DB": url}
    r = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "campaign", "c.toml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stdout + r.stderr  # 1: the OS missed a check
    status = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "campaign", "c.toml", "--status"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert status.returncode == 0 and "2 of 2 cells stored" in status.stdout, status.stdout
    with Store(url) as store:
        cells = sorted(s.labels[LABEL_CELL] for s in store.list_runs({LABEL_CAMPAIGN: "pg"}))
    assert cells == ["first/none/1", "second/none/1"]
    assert "target=second" in (tmp_path / "pg-report.md").read_text()
