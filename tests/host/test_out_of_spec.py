"""Stored runs are always readable: out-of-spec values, stored before the
schema existed or by another tool, never crash `show`, `analyze`, `export`,
`report` or `compare`; and a stream holding such records is ingested with
its good records kept, no traceback (issues 8 and 14)."""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from stores import StoreAt

from rtbench.cli import main
from rtbench.model import CaseResult, Check, Histogram, Run, Series
from rtbench.store import Store
from rtbench.stream import StreamWriter, default_hello

U64_MAX, I64_MAX = 2**64 - 1, 2**63 - 1
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
import make_corpus  # noqa: E402


def log2(**over: object) -> Histogram:
    h = Histogram(
        layout={"kind": "log2", "sub_bits": 5},
        counts=[(40, 3), (41, 2)],
        n=5,
        min=40,
        max=41,
        sum=203,
    )
    for k, v in over.items():
        setattr(h, k, v)
    return h


def odd_series() -> list[Series]:
    """One series per out-of-spec value, none with raw samples (so every
    figure comes from the histogram or the summary)."""
    base: dict[str, Any] = {"case": "ODD", "n": 5, "min": 40, "max": 41, "sum": 203}
    return [
        Series(name="log10", hist=log2(layout={"kind": "log10", "decades": 9}), **base),
        Series(name="no_layout", hist=log2(layout="log2"), **base),
        Series(name="n_above_int64", hist=log2(overflow=U64_MAX, n=U64_MAX, counts=[]), **base),
        Series(name="big_overflow", hist=log2(overflow=2**62, n=2**62 + 5), **base),
        Series(name="overflow_mismatch", hist=log2(overflow=2**63 + 5), **base),
        Series(name="far_bucket", hist=log2(counts=[(40, 3), (2**34, 2)]), **base),
        Series(name="neg_count", hist=log2(counts=[(40, -3), (41, 8)]), **base),
        Series(name="str_count", hist=log2(counts=[(40, "3"), (41, 2)]), **base),
        Series(
            name="linear_zero", hist=log2(layout={"kind": "linear", "lo": 0, "width": 0}), **base
        ),
        Series(
            name="wide_linear",  # valid, at the limits: buckets 2**64 wide
            hist=log2(
                layout={"kind": "linear", "lo": -(2**63), "width": U64_MAX, "buckets": 2},
                counts=[(0, 3), (1, 2)],
                min=-(2**63),
                max=U64_MAX,
            ),
            **base,
        ),
        Series(name="u64_max", case="ODD", n=3, min=0, max=U64_MAX, sum=U64_MAX),
        Series(name="huge_n", case="ODD", n=U64_MAX, min=1, max=2, sum=2**100, dropped=U64_MAX),
        Series(name="swept", case="ODD", point={"n": 2}, n=1, min=5, max=5, sum=5),
        Series(name="swept", case="ODD", point={"n": "many"}, n=1, min=7, max=7, sum=7),
        Series(name="swept", case="ODD", point={"n": 5}, n=1, min=9, max=9, sum=9),
        Series(
            name="samples_vs_bad_hist",
            case="ODD",
            samples=np.arange(40, 45, dtype=np.int64),
            hist=log2(layout={"kind": "log10"}),
            n=5,
            min=40,
            max=44,
            sum=210,
        ),
    ]


def odd_run() -> Run:
    hello = default_hello(["ODD"])
    hello |= {"clock": "tsc", "os": False, "cpu": [2], "realtime": {"ok": "yes", "detail": 5}}
    case = CaseResult("ODD", title="out of spec", params={"n": [2, "many", 5]}, outcome="passed")
    case.duration_ns = U64_MAX
    case.series = odd_series()
    case.checks = [Check("ODD", "c", "pass", "")]
    return Run(hello=hello, cases=[case], bye={"result": "passed", "records": "many"})


@pytest.fixture
def db(store_at: StoreAt) -> str:
    """A store (SQLite, then PostgreSQL) holding two out-of-spec runs."""
    with store_at.open() as store:
        store.save(odd_run())
        store.save(odd_run())
    return store_at.where


def no_crash(result: Result) -> None:
    """An exit status of the outcome rules, and never a traceback."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        exc = result.exception
        raise AssertionError("".join(traceback.format_exception(exc)))
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1, 2), result.output


@pytest.mark.parametrize(
    "args",
    [
        ["show", "1"],
        ["analyze", "1"],
        ["compare", "1", "2"],
        ["export", "1", "--format", "json", "-o", "{tmp}/run.json"],
        ["export", "1", "--format", "csv", "-o", "{tmp}/run.csv"],
        ["report", "1", "-o", "{tmp}/run.html"],
        ["report", "1", "-o", "{tmp}/run.md"],
        ["report", "1", "2", "-o", "{tmp}/compare.html"],
    ],
)
def test_out_of_spec_runs_are_readable(db: str, tmp_path: Path, args: list[str]) -> None:
    result = CliRunner().invoke(main, ["--db", db, *(a.format(tmp=tmp_path) for a in args)])
    no_crash(result)
    assert result.exit_code == 0, result.output


def test_unusable_histograms_are_named_not_used(db: str) -> None:
    result = CliRunner().invoke(main, ["--db", db, "report", "1", "-o", "-"])
    assert result.exit_code == 0, result.output
    for note in (
        "| hist not used: layout 'log10' is unknown to this rtbench |",
        "| hist not used: bucket index 17179869184 is beyond the layout's 1920 buckets |",
        "| hist not used: n = 18446744073709551615 is beyond what the analysis counts (int64) |",
    ):
        assert note in result.output


def test_export_round_trips_the_big_values(db: str, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    no_crash(
        CliRunner().invoke(main, ["--db", db, "export", "1", "--format", "json", "-o", str(out)])
    )
    doc = json.loads(out.read_text())
    text = json.dumps(doc)
    assert str(U64_MAX) in text
    result = CliRunner().invoke(main, ["--db", db, "import", str(out)])
    no_crash(result)


# --- streams holding the four crash kinds of issue 8


def resealed_stream(line_no: int, pattern: bytes, repl: bytes) -> bytes:
    lines = make_corpus.encoded(make_corpus.small_run())
    new = make_corpus.resealed(lines[line_no - 1], pattern, repl)
    return b"".join(make_corpus.spliced(lines, line_no, new))


CRASH_KINDS = {
    "hello clock as a string": (1, rb'"clock":\{[^}]*\}', b'"clock":"tsc"', "damaged", 1),
    "hello os false": (1, rb'"os":\{[^}]*\}', b'"os":false', "damaged", 1),
    "hist overflow above int64": (
        6,
        rb'"overflow":0',
        b'"overflow":18446744073709551615',
        "damaged",
        6,
    ),
    "hist layout log10": (6, rb'"kind":"log2"', b'"kind":"log10"', "version", 6),
    "summary max 2**64-1": (7, rb'"max":\d+', b'"max":18446744073709551615', None, None),
}


@pytest.mark.parametrize("name", sorted(CRASH_KINDS))
def test_ingest_of_the_crash_kinds(name: str, tmp_path: Path) -> None:
    line_no, pattern, repl, kind, line = CRASH_KINDS[name]
    stream = tmp_path / "run.rtb"
    stream.write_bytes(resealed_stream(line_no, pattern, repl))
    db = str(tmp_path / "db.sqlite")
    runner = CliRunner()
    result = runner.invoke(main, ["--db", db, "ingest", str(stream)])
    no_crash(result)
    # Every record arrived and the cases passed; a refused record is damage:
    # the run is incomplete, exit 2 (docs/outcomes.md).
    assert result.exit_code == (2 if kind == "damaged" else 0), result.output
    with Store(db) as store:
        run = store.load(1)
    assert [(i.kind, i.line) for i in run.issues] == ([(kind, line)] if kind else [])
    assert [c.outcome for c in run.cases] == ["passed", "passed"]
    assert sum(len(c.series) for c in run.cases) == 3
    if kind is None:
        latency = run.cases[0].series[0]
        assert latency.max == U64_MAX  # stored exactly
    for command in (["show", "1"], ["analyze", "1"]):
        no_crash(runner.invoke(main, ["--db", db, *command]))


def test_swapped_lines_make_a_complete_run(tmp_path: Path) -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.series("A", "s", [1, 2, 3])
    w.end("A")
    w.bye()
    lines = w.lines
    lines[2], lines[3] = lines[3], lines[2]  # summary before its samples
    lines[-1], lines[-2] = lines[-2], lines[-1]  # bye before the end
    stream = tmp_path / "run.rtb"
    stream.write_text("".join(lines))
    db = str(tmp_path / "db.sqlite")
    result = CliRunner().invoke(main, ["--db", db, "ingest", str(stream)])
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        run = store.load(1)
    assert run.complete and [i.kind for i in run.issues] == ["order", "order"]
    assert run.cases[0].outcome == "passed"


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("n", "5", "'n' must be an integer, not a string \"5\""),
        ("max", 2**64, "'max' = 18446744073709551616 is outside"),
        ("point", {"n": [2]}, "'point.n' must be an integer"),
        ("hello", "x", "'hello' must be an object, not a string"),
    ],
)
def test_import_refuses_what_a_stream_could_not_hold(
    db: str, tmp_path: Path, where: str, value: object, message: str
) -> None:
    out = tmp_path / "run.json"
    runner = CliRunner()
    no_crash(runner.invoke(main, ["--db", db, "export", "1", "--format", "json", "-o", str(out)]))
    doc = json.loads(out.read_text())
    # One series that a stream could hold, so the damage asked for is the
    # first the import finds (it refuses the odd histograms too).
    doc["cases"][0]["series"] = [x for x in doc["cases"][0]["series"] if x["name"] == "u64_max"]
    if where == "hello":
        doc["run"]["hello"] = value
    else:
        doc["cases"][0]["series"][0][where] = value
    out.write_text(json.dumps(doc))
    result = runner.invoke(main, ["--db", db, "import", str(out)])
    no_crash(result)
    assert result.exit_code == 2 and "damaged export" in result.output
    assert message in result.output


def test_the_out_of_spec_corpus_stream_end_to_end(tmp_path: Path) -> None:
    stream = Path(__file__).resolve().parents[1] / "corpus" / "damaged_out_of_spec.rtb"
    db = str(tmp_path / "db.sqlite")
    runner = CliRunner()
    result = runner.invoke(main, ["--db", db, "ingest", str(stream)])
    no_crash(result)
    assert result.exit_code == 2, result.output  # refused records: incomplete
    for args in (
        ["show", "1"],
        ["analyze", "1"],
        ["export", "1", "--format", "csv", "-o", str(tmp_path / "run.csv")],
        ["report", "1", "-o", str(tmp_path / "run.html")],
    ):
        result = runner.invoke(main, ["--db", db, *args])
        no_crash(result)
        assert result.exit_code == 0, result.output
