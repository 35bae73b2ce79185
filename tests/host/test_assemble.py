"""Records -> data model (rtbench.stream.assemble)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtbench.model import Histogram, Run, StreamIssue
from rtbench.stream import Record, StreamWriter, assemble, encode_zzd, load_run, parse_lines
from rtbench.stream.codec import ENCODING

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def build(w: StreamWriter, drop: tuple[int, ...] = ()) -> Run:
    """Parse the writer's lines, leaving out the records with seq in `drop`."""
    lines = [line for seq, line in enumerate(w.lines) if seq not in drop]
    result = parse_lines(lines)
    return assemble(result.records, result.issues, result.log)


def issues(run: Run) -> list[tuple[str, int | None]]:
    return [(i.kind, i.line) for i in run.issues]


def full_run() -> StreamWriter:
    w = StreamWriter()
    w.hello()
    w.warn("mlock", "mlockall failed")  # run-wide, before any case
    w.begin("THR-SW", "Switch", {"n": [2, 5], "cpu": 1})
    for n, base in ((2, 1000), (5, 2000)):
        w.series("THR-SW", "switch", list(range(base, base + 20)), point={"n": n}, chunk=8)
    w.hist(
        "THR-SW",
        "switch",
        layout={"kind": "log2", "sub_bits": 5},
        counts=[(26, 3), (27, 17)],
        n=20,
        min=1000,
        max=1019,
        sum=20190,
        point={"n": 2},
    )
    w.check("THR-SW", "alternation", "pass", "ok")
    w.warn("tick_in_window", "1 tick", case="THR-SW")
    w.end("THR-SW", "passed", duration_ns=5_000, reason="")
    w.begin("SEM-SHF", "Semaphore hand-off")
    w.check("SEM-SHF", "order", "fail", "B ran first")
    w.end("SEM-SHF", "failed", duration_ns=7)
    w.bye()
    return w


def test_a_full_run() -> None:
    run = build(full_run())
    assert run.issues == [] and run.complete
    assert run.hello["agent"] == "rtbench-agent" and run.realtime
    assert run.bye == {"result": "failed", "records": 19}
    assert run.outcome == "failed"
    assert run.warnings[0].code == "mlock" and run.warnings[0].case is None
    assert [c.case for c in run.cases] == ["THR-SW", "SEM-SHF"]

    sw = run.cases[0]
    assert (sw.title, sw.params, sw.outcome, sw.duration_ns) == (
        "Switch",
        {"n": [2, 5], "cpu": 1},
        "passed",
        5000,
    )
    assert [s.label for s in sw.series] == ["switch[n=2]", "switch[n=5]"]
    s2 = sw.find("switch", {"n": 2})
    assert s2 is not None and s2.samples is not None
    assert s2.samples.tolist() == list(range(1000, 1020))
    assert s2.samples.dtype == np.int64
    assert (s2.n, s2.min, s2.max, s2.sum, s2.dropped, s2.holes, s2.unit) == (
        20,
        1000,
        1019,
        20190,
        0,
        0,
        "ns",
    )
    assert s2.hist == Histogram(
        layout={"kind": "log2", "sub_bits": 5},
        counts=[(26, 3), (27, 17)],
        n=20,
        min=1000,
        max=1019,
        sum=20190,
    )
    s5 = sw.find("switch", {"n": 5})
    assert s5 is not None and s5.hist is None and s5.n == 20
    assert [(c.case, c.name, c.verdict, c.detail) for c in sw.checks] == [
        ("THR-SW", "alternation", "pass", "ok")
    ]
    assert [(w.case, w.code) for w in sw.warnings] == [("THR-SW", "tick_in_window")]

    shf = run.cases[1]
    assert (shf.outcome, shf.series, shf.checks[0].verdict) == ("failed", [], "fail")


def test_log_and_parser_issues_pass_through_in_line_order() -> None:
    w = full_run()
    lines = ["boot\n", *w.lines[:3], w.lines[4], "late noise\n", *w.lines[5:]]
    lines[6] = lines[6].replace('"data":"', '"data":"AA')  # CRC mismatch
    result = parse_lines(lines)
    run = assemble(result.records, result.issues, result.log)
    assert run.log == ["boot", "late noise"]
    assert issues(run) == [("gap", 5), ("damaged", 7), ("gap", 8), ("truncated", 20)]


def test_samples_are_placed_by_offset() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.samples("A", "s", [8, 9, 10], offset=8)
    w.samples("A", "s", [0, 1, 2, 3, 4, 5, 6, 7], chunk=4)
    w.end("A")
    w.bye()
    series = build(w).cases[0].series[0]
    assert series.samples is not None and series.samples.tolist() == list(range(11))
    assert series.holes == 0


def test_attrs_of_a_streamed_series_come_with_its_summary() -> None:
    """The agent sends a streamed series' samples as they fill, before the
    attributes measured over the whole series are known (THR-SW's windows):
    the summary's attributes are the series'."""
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.samples("A", "s", [1, 2, 3])
    w.summary("A", "s", n=3, min=1, max=3, sum=6, dropped=0, attrs={"windows": 4})
    w.end("A")
    w.bye()
    series = build(w).cases[0].series[0]
    assert series.attrs == {"windows": 4}


def test_a_lost_chunk_is_a_hole() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.series("A", "s", list(range(100)), chunk=10)  # samples seq 2..11, summary 12
    w.end("A")
    w.bye()
    run = build(w, drop=(4, 11))  # offsets 20 and 90 (the tail)
    series = run.cases[0].series[0]
    assert series.samples is not None
    assert series.samples.tolist() == list(range(20)) + list(range(30, 90))
    assert series.holes == 20 and series.n == 100
    assert issues(run) == [("gap", 5), ("gap", 11), ("truncated", 13)]


def test_a_lost_tail_without_summary_is_not_counted() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.samples("A", "s", list(range(30)), chunk=10)
    run = build(w, drop=(4,))
    series = run.cases[0].series[0]
    assert series.samples is not None and series.samples.tolist() == list(range(20))
    assert series.holes == 0


def test_dropped_samples_are_not_holes() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.samples("A", "s", [5, 6, 7])
    w.summary("A", "s", n=10, min=1, max=9, sum=50, dropped=7)
    w.end("A")
    w.bye()
    series = build(w).cases[0].series[0]
    assert (series.holes, series.dropped, series.n) == (0, 7, 10)


def chunk(offset: int, count: int, data: str) -> dict[str, Any]:
    return {
        "case": "A",
        "series": "s",
        "enc": ENCODING,
        "offset": offset,
        "count": count,
        "data": data,
    }


def test_chunks_that_do_not_decode_are_holes() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.samples("A", "s", range(10))
    w.record("samples", chunk(10, 11, encode_zzd(range(10, 20))))  # line 4: count wrong
    w.samples("A", "s", range(20, 30), offset=20)
    w.record("samples", chunk(30, 2, "AgQ*"))  # line 6: not base64
    w.record("samples", chunk(32, 3, "AgQG"))
    w.end("A")
    w.bye()
    run = build(w)
    series = run.cases[0].series[0]
    assert series.samples is not None
    assert series.samples.tolist() == [*range(10), *range(20, 30), 1, 3, 6]
    assert series.holes == 12  # offsets 10-19 and 30-31
    prefix = "samples record: s: chunk at offset"
    assert [(i.kind, i.line, i.detail) for i in run.issues] == [
        ("damaged", 4, f"{prefix} 10 does not decode: holds 10 values, the record says 11"),
        ("damaged", 6, f"{prefix} 30 does not decode: bad base64 (Only base64 data is allowed)"),
    ]


def test_an_overlapping_chunk_is_ignored() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.samples("A", "s", [0, 1, 2, 3])
    w.samples("A", "s", [99, 99], offset=2)
    w.end("A")
    w.bye()
    run = build(w)
    series = run.cases[0].series[0]
    assert series.samples is not None and series.samples.tolist() == [0, 1, 2, 3]
    assert [(i.kind, i.line) for i in run.issues] == [("damaged", 4)]
    assert "overlaps samples up to 4" in run.issues[0].detail


def test_extreme_samples() -> None:
    values = [INT64_MIN, INT64_MAX, 0, INT64_MAX, INT64_MIN, -1]
    rng = np.random.default_rng(7)
    values += rng.integers(INT64_MIN, INT64_MAX, size=2000, endpoint=True).tolist()
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.series("A", "s", values, chunk=100)
    w.end("A")
    w.bye()
    series = build(w).cases[0].series[0]
    assert series.samples is not None and series.samples.tolist() == values
    assert series.sum == sum(values) and series.holes == 0


def test_cases_without_end() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.end("A")  # seq 2: lost below
    w.begin("B")
    w.samples("A", "late", [1])  # a stray record of A does not reopen it
    w.samples("B", "s", [1, 2])
    run = build(w, drop=(2,))
    a, b = run.cases
    assert (a.outcome, a.reason) == ("error", "end record lost")
    assert (b.outcome, b.reason) == ("error", "stream ended inside the case")
    assert b.series[0].samples is not None and b.series[0].samples.tolist() == [1, 2]
    assert run.outcome == "error" and not run.complete


def test_records_of_a_case_whose_begin_was_lost() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A", "title")
    w.check("A", "c", "pass")
    w.end("A")
    w.bye()
    run = build(w, drop=(1,))
    case = run.cases[0]
    assert (case.case, case.title, case.outcome, len(case.checks)) == ("A", "", "passed", 1)


HIST = {
    "case": "A",
    "series": "s",
    "layout": {"kind": "log2", "sub_bits": 3},
    "counts": [],
    "n": 0,
    "min": 0,
    "max": 0,
    "sum": 0,
}
SAMPLES = {"case": "A", "series": "s", "enc": ENCODING, "offset": 0, "count": 1}


@pytest.mark.parametrize(
    ("kind", "body", "detail"),
    [
        ("begin", {"title": "no case"}, "begin record: no 'case'"),
        ("begin", {"case": 5}, "begin record: 'case' must be a string, not an integer 5"),
        ("begin", {"case": "A", "params": [1]}, "'params' must be an object"),
        ("samples", {**SAMPLES, "data": "AA=="} | {"offset": "0"}, "'offset' must be an integer"),
        ("samples", {**SAMPLES}, "samples record: no 'data'"),
        ("samples", {**SAMPLES, "data": "AA==", "count": True}, "'count' must be an integer"),
        ("samples", {**SAMPLES, "data": "AA==", "offset": -1}, "'offset' = -1 is outside 0.."),
        ("samples", {**SAMPLES, "data": "AA==", "enc": "raw"}, "unknown sample encoding 'raw'"),
        ("samples", {**SAMPLES, "data": "AA==", "point": {"n": [2]}}, "'point.n' must be"),
        ("samples", {**SAMPLES, "data": "AA==", "point": 2}, "'point' must be an object"),
        ("samples", {**SAMPLES, "data": 12}, "'data' must be a string"),
        ("summary", {"case": "A", "series": "s", "n": 1.5, "sum": 1}, "'n' must be an integer"),
        ("summary", {"case": "A", "series": "s", "n": 1}, "summary record: no 'sum'"),
        ("hist", {**HIST, "counts": {}}, "'counts' must be a list"),
        ("hist", {**HIST, "counts": [[1]]}, "[index, count] pairs"),
        ("hist", {**HIST, "counts": [[1, "2"]]}, "'counts count' must be"),
        ("hist", {**HIST, "layout": [1]}, "'layout' must be an object"),
        ("hist", {**HIST, "layout": None}, "'layout' must be an object"),
        ("hist", {k: v for k, v in HIST.items() if k != "layout"}, "hist record: no 'layout'"),
        ("hist", {**HIST, "layout": {"kind": "log2"}}, "no 'layout.sub_bits'"),
        ("hist", {**HIST, "layout": {"kind": "log2", "sub_bits": 64}}, "outside 0..63"),
        ("hist", {**HIST, "layout": {"kind": "linear", "lo": 0, "width": "1"}}, "'layout.width'"),
        ("hist", {**HIST, "n": 1, "min": None}, "'min' must be an integer"),
        ("check", {"case": "A", "name": "c", "verdict": "PASS"}, "'verdict' is 'PASS'"),
        ("check", {"case": "A", "verdict": "pass"}, "check record: no 'name'"),
        ("warn", {"detail": "no code"}, "warn record: no 'code'"),
        ("warn", {"code": "x", "case": ["A"]}, "'case' must be a string"),
        ("end", {"case": "A", "result": "done"}, "'result' is 'done'"),
        ("end", {"case": "A", "result": "passed", "duration_ns": "5"}, "'duration_ns' must be"),
    ],
)
def test_unusable_records_are_damaged(kind: str, body: dict[str, Any], detail: str) -> None:
    w = StreamWriter()
    w.hello()
    w.record(kind, body)
    w.bye()
    run = build(w)
    assert [(i.kind, i.line) for i in run.issues] == [("damaged", 2)]
    assert detail in run.issues[0].detail
    # Nothing half-built is left behind by the bad record.
    assert run.cases == [] and run.warnings == []


def test_unknown_kinds_are_ignored_with_a_version_issue() -> None:
    w = StreamWriter()
    w.hello()
    w.record("frobnicate", {"case": "A"})
    w.bye()
    run = build(w)
    assert run.issues == [
        StreamIssue("version", "unknown record kind 'frobnicate' ignored (newer agent?)", 2)
    ]
    assert run.cases == []


def test_repeats_keep_the_first() -> None:
    w = StreamWriter()
    w.hello()
    w.hello(format=99)
    w.begin("A", "first")
    w.begin("A", "second")
    w.summary("A", "s", n=1, min=1, max=1, sum=1)
    w.summary("A", "s", n=2, min=1, max=1, sum=2)
    w.hist("A", "s", layout={"kind": "log2", "sub_bits": 1}, counts=[], n=0, min=0, max=0, sum=0)
    w.hist("A", "s", layout={"kind": "log2", "sub_bits": 2}, counts=[], n=0, min=0, max=0, sum=0)
    w.end("A", "passed")
    w.end("A", "failed")
    w.record("bye", {"result": "passed", "records": 12})
    w.bye()
    run = build(w)
    assert issues(run) == [("order", line) for line in (2, 4, 6, 8, 10, 12)]
    assert run.bye == {"result": "passed", "records": 12}
    case = run.cases[0]
    assert (case.title, case.outcome, case.series[0].n) == ("first", "passed", 1)
    assert run.hello["format"] == 1
    hist = case.series[0].hist
    assert hist is not None and hist.layout["sub_bits"] == 1


def test_null_extremes_in_an_empty_summary() -> None:
    w = StreamWriter()
    w.hello()
    w.begin("A")
    w.series("A", "s", [])
    w.end("A")
    w.bye()
    series = build(w).cases[0].series[0]
    assert (series.n, series.min, series.max, series.samples) == (0, None, None, None)


def test_assemble_takes_any_iterables() -> None:
    result = parse_lines(full_run().lines)
    run = assemble(iter(result.records))
    assert run.issues == [] and run.log == [] and len(run.cases) == 2


def test_load_run(tmp_path: Path) -> None:
    path = tmp_path / "run.rtb"
    path.write_text("".join(full_run().lines), encoding="utf-8")
    run = load_run(path)
    assert run.complete and [c.case for c in run.cases] == ["THR-SW", "SEM-SHF"]


def test_empty_histogram_has_no_extremes() -> None:
    body = {k: v for k, v in HIST.items() if k not in ("min", "max")}
    run = assemble([Record(0, "hello", {"format": 1}, 1), Record(1, "hist", body, 2)])
    assert not [i for i in run.issues if i.kind == "damaged"]
    case = run.case("A")
    assert case is not None and case.series[0].hist is not None
    assert case.series[0].hist.min is None and case.series[0].hist.n == 0
