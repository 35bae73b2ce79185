"""Terminal tables never cut a number; --format json|csv carry the same figures.

The run has maxima of up to ten digits (a 2.8 s stall: 2839123.456 µs), a
count series and a sweep with long labels: what an 80-column terminal used
to show as `2839…`. The golden file is the whole `show` output at 80
columns; regenerate it with RTBENCH_REGOLD=1 after an intended change.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from pathlib import Path
from typing import cast

import pytest
from click.testing import CliRunner
from rich.console import Console
from rich.table import Table

from rtbench.cli import main
from rtbench.model import Run
from rtbench.reports.figures import figures_table
from rtbench.reports.tables import fit
from rtbench.reports.units import fmt_value
from rtbench.store import Store
from rtbench.stream import StreamWriter, assemble, default_hello, parse_lines

GOLDEN = Path(__file__).parent / "golden" / "show_80.txt"


def _run(scale: int = 1) -> Run:
    w = StreamWriter()
    w.hello(default_hello(["CAL-REF", "THR-SW", "IRQ-SUS"]))
    w.begin("CAL-REF", "Hardware calibration unit")
    w.summary("CAL-REF", "t_std", n=50, min=3000, max=3007, sum=50 * 3003)
    w.end("CAL-REF", "passed", duration_ns=1_000_000)
    w.begin("THR-SW", "Switch between threads", {"n": [2, 1000]})
    for n, worst in ((2, 2_839_123_456), (1000, 97_001_234)):
        values = [900 + i % 50 for i in range(999)] + [worst * scale]
        w.samples("THR-SW", "switch", values, point={"n": n})
        w.summary(
            "THR-SW", "switch", point={"n": n}, n=1000, min=900, max=max(values), sum=sum(values)
        )
    w.end("THR-SW", "passed", duration_ns=400_000_000)
    w.begin("IRQ-SUS", "Sustained interrupt rate")
    w.summary(
        "IRQ-SUS",
        "losses",
        point={"period_ns": 3999629},
        unit="count",
        n=1,
        min=949,
        max=949,
        sum=949,
    )
    w.end("IRQ-SUS", "passed", duration_ns=1_000_000)
    w.bye()
    parsed = parse_lines(w.lines)
    run = assemble(parsed.records, parsed.issues, parsed.log)
    run.started_at = "2026-01-01T00:00:00+00:00"
    # A fixed identity: the golden exports carry it.
    run.uuid = f"00000000-0000-4000-8000-{scale:012d}"
    return run


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        store.save(_run())
        store.save(_run(scale=2))
    return path


def cli(db: Path, *args: str, columns: int = 80) -> str:
    result = CliRunner().invoke(main, ["--db", str(db), *args], env={"COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.output
    return result.output


def _maxima(run: Run) -> list[str]:
    return [fmt_value(s.max, s.unit) for c in run.cases for s in c.series]


def _width(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_show_at_80_columns_golden(db: Path) -> None:
    text = cli(db, "show", "1")
    assert _width(text) <= 80
    for value in _maxima(_run()):
        assert re.search(rf"(?<![\d.]){re.escape(value)}(?![\d.])", text), value
    assert "2839123.456" in text and "949" in text
    assert "…" not in text
    if os.environ.get("RTBENCH_REGOLD"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", [["analyze", "1", "--no-evt"], ["compare", "1", "2"]])
@pytest.mark.parametrize("columns", [80, 100, 132])
def test_every_max_in_full(db: Path, command: list[str], columns: int) -> None:
    text = cli(db, *command, columns=columns)
    assert "…" not in text
    for value in _maxima(_run()):
        assert value in text, (value, text)
    assert "5678246.912" in text or command[0] != "compare"  # run 2's max


def test_columns_left_out_by_priority() -> None:
    table, dropped = fit(figures_table(_run()), 80)
    headers = [str(c.header) for c in table.columns]
    assert "max" in headers and "p99" in cast(str, table.columns[-2].header)
    assert dropped and "max" not in dropped and "p99" not in dropped
    wide, none = fit(figures_table(_run()), 200)
    assert none == [] and len(wide.columns) > len(table.columns)


def test_negative_control_a_plain_table_cuts_the_max() -> None:
    """What the golden test guards against: rich's default table at 80
    columns ellipsises the numbers."""
    run = _run()
    t = Table()
    for col in ("case", "series", "n", "min", "mean", "stddev", "p50", "p90", "p99", "max"):
        t.add_column(col, no_wrap=True)
    for c in run.cases:
        for s in c.series:
            v = fmt_value(s.max, s.unit)
            t.add_row(c.case, s.label, str(s.n), v, v, v, v, v, v, v)
    buf = io.StringIO()
    Console(file=buf, width=80).print(t)
    assert "2839123.456" not in buf.getvalue()


def test_piped_width_follows_columns(db: Path) -> None:
    assert _width(cli(db, "analyze", "1", "--no-evt", columns=200)) > 100
    assert _width(cli(db, "analyze", "1", "--no-evt", columns=70)) <= 70


# --- json / csv ---------------------------------------------------------------


def _series_max(run: Run) -> dict[tuple[str, str], int | None]:
    return {(c.case, s.label): s.max for c in run.cases for s in c.series}


EXPORTS = {
    "analyze.csv": ["analyze", "1", "--format", "csv"],
    "analyze.json": ["analyze", "1", "--format", "json"],
    "compare.csv": ["compare", "1", "2", "--format", "csv"],
    "show.csv": ["show", "1", "--format", "csv"],
    "export.csv": ["export", "1", "--format", "csv", "-o", "-"],
}


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_exports_match_their_golden_files(db: Path, name: str) -> None:
    """Issue 20: every export, whole. Regenerate with RTBENCH_REGOLD=1 after
    an intended change, and read the diff: each figure is in the unit its
    row's `unit` names (ns here, never the terminal's µs)."""
    text = cli(db, *EXPORTS[name])
    golden = GOLDEN.parent / f"export_{name}"
    if os.environ.get("RTBENCH_REGOLD"):
        golden.write_text(text, encoding="utf-8")
    assert_same_export(text, golden.read_text(encoding="utf-8"))


# A float's last digits are the numeric library's: numpy 2.4 computes a
# standard deviation that 2.3 wrote 3065885.025243667 as 3065885.0252436665.
# Everything else must match to the character; floats to 12 digits.
_FLOAT = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def assert_same_export(text: str, golden: str) -> None:
    if _FLOAT.split(text) != _FLOAT.split(golden):
        assert text == golden  # pytest's diff shows where
    for got, want in zip(_FLOAT.findall(text), _FLOAT.findall(golden), strict=True):
        assert math.isclose(float(got), float(want), rel_tol=1e-12), (got, want)


def test_golden_floats_are_compared_to_12_digits() -> None:
    assert_same_export("a,3065885.025243667,b", "a,3065885.0252436665,b")
    with pytest.raises(AssertionError):
        assert_same_export("a,3065885.02524,b", "a,3065885.0252436665,b")
    with pytest.raises(AssertionError):
        assert_same_export("a,1.5,c", "a,1.5,b")


def test_csv_units_say_what_the_values_are(db: Path) -> None:
    """A column of figures is in the unit the row's `unit` names: the
    10-digit worst switch is 2839123456 ns, not 2839123456 "µs"; and the
    analyze CSV holds every table, each row naming its table."""
    rows = list(csv.DictReader(io.StringIO(cli(db, "analyze", "1", "--format", "csv"))))
    assert "shown_unit" not in rows[0]
    tables = {r["table"] for r in rows}
    assert {"statistics", "ratings", "worst_case"} <= tables, tables
    switch = next(r for r in rows if r["table"] == "statistics" and r["series"] == "switch[n=2]")
    assert (switch["unit"], switch["max"]) == ("ns", "2839123456")
    for r in rows:
        if r["table"] == "worst_case":
            assert r["unit"] == "ns", r  # the estimates are raw too
    doc = json.loads(cli(db, "analyze", "1", "--format", "json"))
    assert {r["unit"] for r in doc["statistics"]} == {"ns", "count"}
    assert all("shown_unit" not in r for r in doc["statistics"])


@pytest.mark.parametrize("command,table", [("show", "figures"), ("analyze", "statistics")])
def test_json_and_csv_carry_the_figures(db: Path, command: str, table: str) -> None:
    expected = _series_max(_run())
    doc = json.loads(cli(db, command, "1", "--format", "json"))
    assert doc["run"]["id"] == 1
    rows = doc[table]
    assert {(r["case"], r["series"]): r["max"] for r in rows} == expected
    units = {r["series"]: (r["unit"], r["kind"]) for r in rows}
    assert units["losses[period_ns=3999629]"] == ("count", "count")
    assert units["switch[n=2]"] == ("ns", "latency")
    csv_rows = list(csv.DictReader(io.StringIO(cli(db, command, "1", "--format", "csv"))))
    csv_rows = [r for r in csv_rows if r["table"] == table]
    assert {(r["case"], r["series"]): int(r["max"]) for r in csv_rows} == expected
    # the terminal shows the same number, in its display unit
    text = cli(db, command, "1", columns=200)
    for r in rows:
        assert fmt_value(r["max"], r["unit"]) in text


def test_compare_json_and_csv(db: Path) -> None:
    doc = json.loads(cli(db, "compare", "1", "2", "--format", "json"))
    assert [r["id"] for r in doc["runs"]] == [1, 2]
    row = next(r for r in doc["comparison"] if r["series"] == "switch[n=2]")
    assert (row["run_1"], row["run_2"]) == (2_839_123_456, 5_678_246_912)
    assert row["ratio_2"] == pytest.approx(2.0)
    assert row["test"] and "pvalue" in row
    rows = list(csv.DictReader(io.StringIO(cli(db, "compare", "1", "2", "--format", "csv"))))
    got = next(r for r in rows if r["series"] == "switch[n=2]")
    assert float(got["run_2"]) == 5_678_246_912


def test_runs_json_and_csv(db: Path) -> None:
    runs = json.loads(cli(db, "runs", "--format", "json"))["runs"]
    assert [r["id"] for r in runs] == [2, 1] and runs[0]["cases"] == 3
    rows = list(csv.DictReader(io.StringIO(cli(db, "runs", "--format", "csv"))))
    assert [r["id"] for r in rows] == ["2", "1"]


def test_a_mean_one_sample_dominates_is_flagged(db: Path) -> None:
    """Issue 20: THR-CTX switch[n=0] showed mean 5.745 above p99 4.168 (one
    51.7 ms sample) with no word. Here switch[n=2] is 999 samples near 0.9 µs
    and one of 2.8 s: flagged `mean>p99`; calibration (even) is not."""
    doc = json.loads(cli(db, "show", "1", "--format", "json"))
    flags = {r["series"]: r["flags"] for r in doc["figures"]}
    assert "mean>p99" in flags["switch[n=2]"] and "mean>p99" in flags["switch[n=1000]"]
    assert "mean>p99" not in flags["t_std"]
    assert "mean>p99" in cli(db, "show", "1", columns=200)


def test_a_long_length_of_time_reads_in_ms() -> None:
    """Issue 20: THR-B-RR's slice printed 98644.997 µs for 98.6 ms. A
    duration of 10 ms or more shows in ms; a latency stays in µs, and the
    raw figure for scripts stays ns."""
    w = StreamWriter()
    w.hello(default_hello(["THR-B-RR"]))
    w.begin("THR-B-RR", "Round robin")
    w.summary("THR-B-RR", "slice", n=3, min=98_000_000, max=98_644_997, sum=295_000_000,
              kind="duration")  # fmt: skip
    w.summary("THR-B-RR", "latency_like", n=1, min=98_644_997, max=98_644_997, sum=98_644_997)
    w.end("THR-B-RR", "passed", duration_ns=1_000_000)
    w.bye()
    parsed = parse_lines(w.lines)
    run = assemble(parsed.records, parsed.issues, parsed.log)
    table = figures_table(run)
    rows = {r["series"]: r for r in table.rows}
    [mx] = [c for c in table.columns if c.key == "max"]
    [unit] = [c for c in table.columns if c.key == "unit"]
    assert (unit.cell(rows["slice"]).plain, mx.cell(rows["slice"]).plain) == ("ms", "98.645")
    assert (unit.cell(rows["latency_like"]).plain, mx.cell(rows["latency_like"]).plain) == (
        "µs",
        "98644.997",
    )
    assert rows["slice"]["unit"] == "ns" and rows["slice"]["max"] == 98_644_997
