"""`rtbench trend`: one series over a labelled sequence of stored runs, in
date or kernel-version order, as a table, CSV and an HTML page."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from helpers import rtbench_here
from test_analysis_fixtures import C, S, build_run

from rtbench.analysis.trend import TrendError, parse_spec, points, version_key
from rtbench.model import Run
from rtbench.store import Store

US = 1000


def _run(release: str, started: str, worst_us: int, board: str = "b1") -> Run:
    run = build_run([C("JIT-PER", [S("latency", [US] * 99 + [worst_us * US])])])
    run.hello.setdefault("os", {})["release"] = release
    run.started_at = started
    run.labels = {"board": board}
    return run


@pytest.fixture
def stored(db: Path) -> Path:
    # Stored out of order on purpose: the trend orders them itself.
    with Store(str(db)) as store:
        store.save(_run("6.1.10-rt", "2026-03-01T00:00:00Z", 30))
        store.save(_run("6.1.9-rt", "2026-01-01T00:00:00Z", 10))
        store.save(_run("6.12.1-rt", "2026-02-01T00:00:00Z", 20))
        store.save(_run("6.1.9-rt", "2026-01-15T00:00:00Z", 99, board="other"))
    return db


def _csv(args: list[str]) -> list[dict[str, str]]:
    r = rtbench_here("trend", *args, "--format", "csv")
    assert r.returncode == 0, r.stderr
    return list(csv.DictReader(io.StringIO(r.stdout)))


def test_three_runs_by_date_and_by_kernel(stored: Path) -> None:
    by_date = _csv(["--label", "board=b1"])
    assert [row["kernel"] for row in by_date] == ["6.1.9-rt", "6.12.1-rt", "6.1.10-rt"]
    assert [float(row["max"]) for row in by_date] == [10 * US, 20 * US, 30 * US]
    by_kernel = _csv(["--label", "board=b1", "--by", "kernel"])
    # version order, not text order: 6.1.9 < 6.1.10 < 6.12.1
    assert [row["kernel"] for row in by_kernel] == ["6.1.9-rt", "6.1.10-rt", "6.12.1-rt"]


def test_html_page_and_table(stored: Path, tmp_path: Path) -> None:
    page = tmp_path / "trend.html"
    r = rtbench_here("trend", "--label", "board=b1", "-o", str(page))
    assert r.returncode == 0, r.stderr
    assert "JIT-PER/latency over 3 runs" in r.stdout
    html = page.read_text()
    assert html.count("<svg") == 1 and html.count("<tr>") == 4  # header + 3 points
    assert "6.12.1-rt" in html


def test_nothing_to_draw_is_an_error(stored: Path) -> None:
    r = rtbench_here("trend", "--label", "board=none")
    assert r.returncode == 2 and "no stored run" in r.stderr
    r = rtbench_here("trend", "--series", "JIT-PER")
    assert r.returncode == 2 and "CASE/SERIES" in r.stderr


def test_spec_and_version_order() -> None:
    spec = parse_spec("JIT-PER/latency[cpu=1]")
    assert (spec.case, spec.name, spec.point) == ("JIT-PER", "latency", "cpu=1")
    with pytest.raises(TrendError):
        parse_spec("latency")
    assert sorted(["6.12.1", "6.1.10", "6.1.9"], key=version_key) == ["6.1.9", "6.1.10", "6.12.1"]
    run = build_run(
        [C("JIT-PER", [S("latency", [1, 2], {"cpu": 0}), S("latency", [3], {"cpu": 1})])]
    )
    assert [p.series for p in points([run], parse_spec("JIT-PER/latency"))] == [
        "latency[cpu=0]",
        "latency[cpu=1]",
    ]
    assert [p.max for p in points([run], spec)] == [3.0]
