"""The stream corpus (tests/corpus): exactly what the host reports for each file.

The expectations below are written out by hand from tests/corpus/README.md,
not derived from the generator, so a change in either shows up here.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rtbench.model import Run
from rtbench.stream import (
    ParseResult,
    UnsupportedStreamVersion,
    assemble,
    parse_file,
    parse_lines,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
WRITTEN = 23  # records in the base run (good_small.rtb)
INT64_MIN, INT64_MAX, UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_corpus = load_generator()


def read(name: str) -> tuple[ParseResult, Run]:
    result = parse_file(CORPUS / name)
    return result, assemble(result.records, result.issues, result.log)


def base_records() -> dict[int, tuple[str, dict[str, Any]]]:
    result = parse_file(CORPUS / "good_small.rtb")
    return {r.seq: (r.kind, r.body) for r in result.records}


# --- the files are what the generator makes


def test_files_match_the_generator() -> None:
    built = make_corpus.build()
    on_disk = {p.name for p in CORPUS.glob("*.rtb")}
    assert on_disk == set(built), "run tests/corpus/make_corpus.py"
    for name, data in built.items():
        assert (CORPUS / name).read_bytes() == data, f"{name} is stale: run make_corpus.py"


def test_readme_lists_every_file() -> None:
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    for name in make_corpus.build():
        assert f"`{name}`" in readme


# --- damaged files


@dataclass
class Expect:
    parse: list[tuple[str, int]]  # parser issues (kind, line), in order
    run: list[tuple[str, int]]  # all the run's issues, parser's and assembler's, by line
    missing: set[int]  # seqs written but not kept
    damaged: int  # record lines the parser skipped
    log: int = 0  # noise lines


DAMAGED = {
    "damaged_truncated_line.rtb": Expect(
        parse=[("damaged", 8), ("gap", 9), ("truncated", 23)],
        run=[("damaged", 8), ("gap", 9), ("truncated", 23)],
        missing={7},
        damaged=1,
    ),
    "damaged_flipped_byte.rtb": Expect(
        parse=[("damaged", 4), ("gap", 5), ("truncated", 23)],
        run=[("damaged", 4), ("gap", 5), ("truncated", 23)],
        missing={3},
        damaged=1,
    ),
    "damaged_missing_seq.rtb": Expect(
        parse=[("gap", 9), ("truncated", 22)],
        run=[("gap", 9), ("truncated", 22)],
        missing={8},
        damaged=0,
    ),
    "damaged_repeated_seq.rtb": Expect(
        parse=[("duplicate", 12)],
        run=[("duplicate", 12)],
        missing=set(),
        damaged=0,
    ),
    "damaged_noise_in_record.rtb": Expect(
        parse=[("damaged", 12), ("gap", 14), ("truncated", 24)],
        run=[("damaged", 12), ("gap", 14), ("truncated", 24)],
        missing={11},
        damaged=1,
        log=1,
    ),
    "damaged_cut_before_bye.rtb": Expect(
        parse=[("truncated", 22)],
        run=[("truncated", 22)],
        missing={22},
        damaged=0,
    ),
    "damaged_cut_in_samples.rtb": Expect(
        parse=[("damaged", 16), ("truncated", 16)],
        run=[("damaged", 16), ("truncated", 16)],
        missing=set(range(15, 23)),
        damaged=1,
    ),
    "damaged_not_utf8.rtb": Expect(
        parse=[("damaged", 9), ("gap", 10), ("truncated", 24)],
        run=[("damaged", 9), ("gap", 10), ("truncated", 24)],
        missing={7},
        damaged=1,
        log=1,
    ),
    "damaged_bad_base64.rtb": Expect(
        parse=[],
        run=[("damaged", 5)],
        missing=set(),
        damaged=0,
    ),
    "damaged_bad_records.rtb": Expect(
        parse=[
            ("damaged", 7),
            ("damaged", 8),
            ("damaged", 9),
            ("damaged", 22),
            ("gap", 23),
            ("truncated", 23),
        ],
        run=[
            ("damaged", 7),
            ("damaged", 8),
            ("damaged", 9),
            ("version", 19),
            ("damaged", 22),
            ("gap", 23),
            ("truncated", 23),
        ],
        missing={6, 7, 8, 21},
        damaged=4,
    ),
    "damaged_swapped_lines.rtb": Expect(
        parse=[("order", 4), ("order", 23)],
        run=[("order", 4), ("order", 23)],
        missing=set(),
        damaged=0,
    ),
    "damaged_out_of_spec.rtb": Expect(
        parse=[("damaged", 1), ("version", 6), ("damaged", 13), ("damaged", 17), ("damaged", 18)],
        run=[("damaged", 1), ("version", 6), ("damaged", 13), ("damaged", 17), ("damaged", 18)],
        missing={0, 5, 12, 16, 17},
        damaged=5,
    ),
}


def test_every_damaged_file_has_expectations() -> None:
    damaged = {n for n in make_corpus.build() if n.startswith("damaged_")}
    assert damaged == {*DAMAGED, "damaged_newer_version.rtb"}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_file_issues(name: str) -> None:
    expect = DAMAGED[name]
    result, run = read(name)
    assert [(i.kind, i.line) for i in result.issues] == expect.parse
    assert [(i.kind, i.line) for i in run.issues] == expect.run
    assert len(result.log) == expect.log
    # A refused record (bad base64, out of spec) is damage: incomplete.
    whole = ("repeated_seq", "swapped_lines")
    assert run.complete == (name.removeprefix("damaged_").removesuffix(".rtb") in whole)


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_file_keeps_every_intact_record(name: str) -> None:
    expect = DAMAGED[name]
    result, _ = read(name)
    base = base_records()
    kept = {r.seq: (r.kind, r.body) for r in result.records}
    assert len(kept) == len(result.records)  # no seq twice
    assert set(kept) == set(range(WRITTEN)) - expect.missing
    # Kept records are exactly what the agent wrote, except those the damage
    # deliberately rewrote under a valid CRC (damaged_bad_*).
    rewritten = {
        "damaged_bad_base64.rtb": {4},
        "damaged_bad_records.rtb": {18},
        "damaged_out_of_spec.rtb": {6},
    }
    for seq, record in kept.items():
        if seq not in rewritten.get(name, set()):
            assert record == base[seq], seq
    # Skipped: damaged lines, and intact ones only a newer agent would write.
    damaged = sum(1 for i in result.issues if i.kind in ("damaged", "version"))
    assert damaged == expect.damaged
    lost = len(expect.missing) - damaged  # never arrived at all
    assert len(kept) + damaged + lost == WRITTEN


def test_gap_counts_add_up() -> None:
    result, _ = read("damaged_missing_seq.rtb")
    assert result.issues[0].detail == "seq 9 follows 7: 1 record lost"
    assert result.issues[1].detail == "incomplete: bye counts 23 records written, 22 arrived"


def test_truncated_line() -> None:
    result, run = read("damaged_truncated_line.rtb")
    assert "no CRC" in result.issues[0].detail
    case = run.case("CAL-TIMER")
    assert case is not None and case.checks == [] and case.outcome == "passed"


def test_flipped_byte() -> None:
    result, run = read("damaged_flipped_byte.rtb")
    assert result.issues[0].detail.startswith("CRC mismatch: line says 8886dddd")
    case = run.case("CAL-TIMER")
    series = case.find("latency") if case else None
    assert series is not None and series.samples is not None
    assert (len(series.samples), series.holes, series.n) == (12, 8, 20)


def test_missing_end() -> None:
    _, run = read("damaged_missing_seq.rtb")
    case = run.case("CAL-TIMER")
    assert case is not None and (case.outcome, case.reason) == ("error", "end record lost")
    assert run.outcome == "error"


def test_repeated_seq() -> None:
    result, run = read("damaged_repeated_seq.rtb")
    assert result.issues[0].detail == "seq 10 repeats line 11; the first copy is kept"
    assert run.complete  # a duplicate loses nothing
    case = run.case("THR-SW")
    series = case.find("switch", {"n": 2}) if case else None
    assert series is not None and series.samples is not None and len(series.samples) == 12


def test_noise_in_record() -> None:
    result, run = read("damaged_noise_in_record.rtb")
    assert len(result.log) == 1 and result.log[0].startswith('a":"7kefJYsL5g0="}')
    case = run.case("THR-SW")
    series = case.find("switch", {"n": 2}) if case else None
    assert series is not None and series.samples is not None
    assert (len(series.samples), series.holes) == (8, 4)


def test_cut_before_bye() -> None:
    result, run = read("damaged_cut_before_bye.rtb")
    assert result.issues[0].detail == "no bye: the last record is seq 21, line 22"
    assert [c.outcome for c in run.cases] == ["passed", "passed"]
    assert run.bye is None and not run.complete and run.outcome == "error"


def test_cut_in_samples() -> None:
    _, run = read("damaged_cut_in_samples.rtb")
    cal, sw = run.cases
    assert cal.outcome == "passed"
    assert (sw.outcome, sw.reason) == ("error", "stream ended inside the case")
    n2, n5 = sw.series
    assert n2.samples is not None and len(n2.samples) == n2.n == 12
    assert n5.samples is not None and len(n5.samples) == 8 and n5.hist is None


def test_not_utf8() -> None:
    result, run = read("damaged_not_utf8.rtb")
    assert "not valid UTF-8" in result.issues[0].detail
    assert result.log == ["U-Boot 2024.01 (\ufffdt\ufffd build)"]
    case = run.case("CAL-TIMER")
    assert case is not None and case.checks == []


def test_bad_base64() -> None:
    _, run = read("damaged_bad_base64.rtb")
    assert run.issues[0].detail == (
        "samples record: latency: chunk at offset 16 does not decode: "
        "bad base64 (Only base64 data is allowed)"
    )
    case = run.case("CAL-TIMER")
    series = case.find("latency") if case else None
    assert series is not None and series.samples is not None
    assert (len(series.samples), series.holes) == (16, 4)
    assert not run.complete  # the stream is whole, but a refused chunk is damage


def test_bad_records() -> None:
    _, run = read("damaged_bad_records.rtb")
    details = [i.detail for i in run.issues]
    assert details[:5] == [
        "summary record: 'n' must be an integer, not a string \"20\"",
        "check record: 'verdict' is 'maybe', not one of pass, fail, error, skip",
        "end record: no 'result'",
        "unknown record kind 'frobnicate' ignored (newer agent?)",
        "body is a JSON list, not an object",
    ]
    cal = run.case("CAL-TIMER")
    assert cal is not None and (cal.outcome, cal.reason, cal.checks) == (
        "error",
        "end record lost",
        [],
    )
    assert cal.series[0].n == 0 and cal.series[0].holes == 0
    sw = run.case("THR-SW")
    assert sw is not None and sw.warnings == [] and run.warnings == []


def test_swapped_lines_are_put_back() -> None:
    result, run = read("damaged_swapped_lines.rtb")
    assert [i.detail for i in result.issues] == [
        "seq 2 arrives after seq 3; put back",
        "seq 21 arrives after seq 22; put back",
    ]
    assert [r.seq for r in result.records] == list(range(WRITTEN))
    _, base = read("good_small.rtb")
    assert run.complete and run.outcome == base.outcome == "passed"
    for got, want in zip(run.cases, base.cases, strict=True):
        for s, t in zip(got.series, want.series, strict=True):
            assert s.samples is not None and t.samples is not None
            assert s.samples.tolist() == t.samples.tolist() and s.holes == 0
    assert run.warnings == base.warnings


def test_out_of_spec() -> None:
    _, run = read("damaged_out_of_spec.rtb")
    assert [i.detail for i in run.issues] == [
        "hello record: 'clock' must be an object, not a string \"tsc\"",
        "hist record: layout 'log10' is unknown to this rtbench (newer agent?)",
        "hist record: n is 12, but counts, underflow and overflow add up to "
        "18446744073709551627",
        "hist record: bucket index 17179869184 is beyond the layout's 496 buckets",
        "summary record: 'n' = 18446744073709551616 is outside 0..18446744073709551615",
    ]
    assert run.hello == {} and [c.outcome for c in run.cases] == ["passed", "passed"]
    cal, sw = run.cases
    assert cal.series[0].hist is None and cal.series[0].max == UINT64_MAX  # kept exactly
    n2, n5 = sw.series
    assert n2.hist is None and n2.n == 12
    assert n5.hist is None and n5.n == 0 and n5.samples is not None and n5.holes == 0


def test_newer_version() -> None:
    with pytest.raises(UnsupportedStreamVersion, match=r"line 1: stream format 2 is newer"):
        parse_file(CORPUS / "damaged_newer_version.rtb")


# --- good files


@pytest.mark.parametrize("name", sorted(n for n in make_corpus.build() if n.startswith("good_")))
def test_good_files_have_no_issues(name: str) -> None:
    result, run = read(name)
    assert result.issues == [] and run.issues == []
    assert run.complete and run.bye is not None
    assert run.bye["records"] == len(result.records)


def test_good_small() -> None:
    _, run = read("good_small.rtb")
    assert run.outcome == "passed" and run.realtime
    assert [c.case for c in run.cases] == ["CAL-TIMER", "THR-SW"]
    assert [w.code for w in run.all_warnings()] == ["affinity", "tick_in_window"]
    for case in run.cases:
        for s in case.series:
            assert s.samples is not None and s.hist is not None
            assert len(s.samples) == s.n == s.hist.n and s.holes == 0
            assert int(s.samples.sum()) == s.sum == s.hist.sum
            assert (int(s.samples.min()), int(s.samples.max())) == (s.min, s.max)
            for index, count in s.hist.counts:
                lo, hi = s.hist.bucket_bounds(index)
                assert int(((s.samples >= lo) & (s.samples < hi)).sum()) == count


def test_good_noise_matches_good_small() -> None:
    noisy, _ = read("good_noise.rtb")
    clean, _ = read("good_small.rtb")
    assert [(r.seq, r.kind, r.body) for r in noisy.records] == [
        (r.seq, r.kind, r.body) for r in clean.records
    ]
    assert len(noisy.log) == 10
    assert noisy.log[0] == "U-Boot SPL 2024.01" and noisy.log[-1] == "root@target:~# "


def test_good_extremes() -> None:
    _, run = read("good_extremes.rtb")
    case = run.cases[0]
    raw, zeros = case.series
    assert raw.samples is not None and raw.unit == "cycles"
    assert raw.samples.tolist() == [
        0,
        INT64_MAX,
        INT64_MIN,
        INT64_MAX,
        0,
        -1,
        1,
        INT64_MIN,
        INT64_MIN,
        0,
    ]
    assert (raw.min, raw.max) == (INT64_MIN, INT64_MAX)
    assert raw.hist is not None and raw.hist.layout["width"] == UINT64_MAX
    assert zeros.samples is not None and zeros.samples.tolist() == [0] * 5
    assert (zeros.n, zeros.dropped, zeros.holes) == (UINT64_MAX, UINT64_MAX - 5, 0)
    assert case.duration_ns == INT64_MAX
    assert case.params == {"limit": INT64_MAX, "floor": INT64_MIN, "mask": UINT64_MAX}


def test_good_strings() -> None:
    _, run = read("good_strings.rtb")
    awkward = make_corpus.AWKWARD
    case = run.cases[0]
    assert case.case == 'STR"1' and case.title == awkward and case.reason == awkward
    assert case.params["ключ"] == "значение"
    assert case.checks[0].name == awkward and case.checks[0].detail == awkward
    assert case.warnings[0].detail == awkward
    assert case.series[0].label == 'naïve/series[mode=a"b\\c]'
    assert run.hello["cpu"]["model"] == "Ünïcödé CPU ™"


def test_good_strings_as_text_lines() -> None:
    # Reading the file as text, split on '\n' only, gives the same result;
    # str.splitlines() would split on the raw U+2028 and damage a record.
    text = (CORPUS / "good_strings.rtb").read_text(encoding="utf-8")
    assert parse_lines(text.split("\n")[:-1]).issues == []
    assert any(i.kind == "damaged" for i in parse_lines(text.splitlines()).issues)
