"""The line parser (rtbench.stream.parser) and the writer it is tested with."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rtbench import STREAM_FORMAT
from rtbench.model import StreamIssue
from rtbench.stream import (
    ParseResult,
    Record,
    StreamError,
    StreamParser,
    StreamWriter,
    UnsupportedStreamVersion,
    crc32,
    parse_file,
    parse_lines,
    record_line,
)


def sealed(text: str) -> str:
    """A record line around `text` (everything between prefix and CRC)."""
    return f"@rtb {text} {crc32(text.encode()):08x}\n"


def small_stream() -> list[str]:
    w = StreamWriter()
    w.hello()
    w.begin("A", "case a")
    w.samples("A", "s", [1, 2, 3], chunk=2)
    w.end("A")
    w.bye()
    return w.lines  # seqs 0..5, bye.records = 6


def issues(result: ParseResult) -> list[tuple[str, int | None]]:
    return [(i.kind, i.line) for i in result.issues]


def only_issue(line: str | bytes) -> StreamIssue:
    parser = StreamParser()
    assert parser.feed(line) is None
    assert len(parser.issues) == 1
    return parser.issues[0]


# --- the writer's lines


def test_writer_lines_follow_the_grammar() -> None:
    line = record_line(1, 7, "warn", {"code": "x", "detail": 'a"b'})
    assert line == sealed('1 7 warn {"code":"x","detail":"a\\"b"}')
    lines = small_stream()
    assert [ln.split(" ")[2] for ln in lines] == [str(i) for i in range(6)]
    assert '"records":6' in lines[-1]


def test_writer_writes_to_a_file() -> None:
    out = io.StringIO()
    w = StreamWriter(out)
    w.hello()
    w.bye()
    assert w.lines == []
    result = parse_lines(out.getvalue().splitlines(keepends=True))
    assert issues(result) == []
    assert [r.kind for r in result.records] == ["hello", "bye"]


# --- good lines


def test_a_complete_stream() -> None:
    result = parse_lines(small_stream())
    assert result.issues == [] and result.log == []
    assert [(r.seq, r.kind, r.line) for r in result.records] == [
        (0, "hello", 1),
        (1, "begin", 2),
        (2, "samples", 3),
        (3, "samples", 4),
        (4, "end", 5),
        (5, "bye", 6),
    ]
    assert result.records[1].body == {
        "case": "A",
        "title": "case a",
        "params": {},
        "deadline_ms": 3600,
    }
    assert result.records[0].version == STREAM_FORMAT


def test_feed_returns_the_record_and_counts_lines() -> None:
    parser = StreamParser()
    assert parser.feed("boot noise\n") is None
    record = parser.feed(record_line(1, 0, "hello", {"format": 1}).encode())
    assert record == Record(0, "hello", {"format": 1}, 2, 1)
    assert parser.line == 2
    assert parser.log == ["boot noise"]


def test_noise_before_the_prefix_and_line_ends() -> None:
    lines = small_stream()
    mixed: list[str | bytes] = [
        "[ 0.000] kernel message\n",
        "[12:00:01.5] " + lines[0],  # a serial console's timestamp
        lines[1].replace("\n", "\r\n").encode(),
        "half a kernel message @rtb " + lines[2][len("@rtb ") :],
        lines[3].rstrip("\n"),  # no line end at all
        "\n",
        "prompt# @rtb-agent starting\n",  # '@rtb' without its space is noise
        *lines[4:],
    ]
    result = parse_lines(mixed)
    assert issues(result) == []
    assert [r.line for r in result.records] == [2, 3, 4, 5, 8, 9]
    assert result.log == ["[ 0.000] kernel message", "", "prompt# @rtb-agent starting"]


def test_the_first_prefix_counts() -> None:
    # A record whose JSON holds the prefix: the first occurrence is the real one.
    line = record_line(1, 0, "warn", {"code": "x", "detail": "@rtb 1 0 hello {} 00000000"})
    parser = StreamParser()
    record = parser.feed("noise " + line)
    assert record is not None and record.body["detail"].startswith("@rtb ")


def test_utf8_and_escapes_survive() -> None:
    detail = 'q"b\\n\\\\ \n\t\x01 été 日本 🙂 \u2028'
    line = record_line(1, 0, "warn", {"code": "x", "detail": detail})
    for form in (line, line.encode()):
        record = StreamParser().feed(form)
        assert record is not None and record.body["detail"] == detail


def test_big_integers_are_exact() -> None:
    body = {"case": "A", "series": "s", "n": (1 << 64) - 1, "min": -(1 << 63), "sum": 1 << 100}
    body["max"] = (1 << 64) - 1
    record = StreamParser().feed(record_line(1, 0, "summary", body))
    assert record is not None and record.body == body


# --- damaged lines


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1 0 hello", "3 fields before the CRC, expected 4"),
        ("1 x hello {}", "seq is not a decimal number"),
        ("one 0 hello {}", "version is not a decimal number"),
        ("1 -1 hello {}", "seq is not a decimal number"),
        ("1 0 Hello {}", "bad record kind"),
        ("1 0 hello-2 {}", "bad record kind"),
        ("1 0 hello {", "body is not JSON"),
        ("1 0 hello [1,2]", "JSON list, not an object"),
        ("1 0 hello 17", "JSON int, not an object"),
        ('1 0 hello {"a":1} trailing', "body is not JSON"),
        ("0 0 hello {}", "stream format 0 does not exist"),
        pytest.param("1 " + "9" * 5000 + " hello {}", "seq is not a decimal", id="huge-seq"),
        pytest.param("1 0 hello " + "[" * 100_000, "body is not JSON", id="deep-json"),
        pytest.param('1 0 hello {"n":' + "9" * 5000 + "}", "body is not JSON", id="huge-int"),
    ],
)
def test_sealed_but_malformed(text: str, reason: str) -> None:
    issue = only_issue(sealed(text))
    assert issue.kind == "damaged" and issue.line == 1
    assert reason in issue.detail


def test_crc_mismatch() -> None:
    line = record_line(1, 0, "hello", {"format": 1}).replace("format", "formal")
    issue = only_issue(line)
    assert issue.kind == "damaged" and "CRC mismatch" in issue.detail


@pytest.mark.parametrize(
    "line",
    [
        "@rtb 1 0 hello {}",  # no CRC
        "@rtb 1 0 hello {} 0123456",  # 7 digits
        "@rtb 1 0 hello {}0123abcd",  # no space before it
        "@rtb ",
        sealed("1 0 hello {}").upper().replace("@RTB", "@rtb"),  # uppercase hex
    ],
)
def test_no_crc_field(line: str) -> None:
    issue = only_issue(line)
    assert issue.kind == "damaged" and "no CRC" in issue.detail


def test_bytes_that_are_not_utf8() -> None:
    text = b'1 0 warn {"code":"x","detail":"\xe9t\xe9"}'
    issue = only_issue(b"@rtb " + text + b" %08x\n" % crc32(text))
    assert issue.kind == "damaged" and "not valid UTF-8" in issue.detail
    # Without a prefix the same bytes are noise, kept readable in the log.
    parser = StreamParser()
    assert parser.feed(b"caf\xe9\n") is None
    assert parser.log == ["caf\ufffd"] and parser.issues == []


def test_text_that_cannot_be_utf8() -> None:
    # A lone surrogate (from a lenient decode upstream) is damage, not a crash.
    issue = only_issue('@rtb 1 0 warn {"code":"\udce9"} 00000000')
    assert issue.kind == "damaged"


# --- versions


def test_a_newer_version_is_a_clear_error() -> None:
    parser = StreamParser()
    parser.feed("noise\n")
    with pytest.raises(UnsupportedStreamVersion) as e:
        parser.feed(record_line(STREAM_FORMAT + 1, 0, "hello", {}))
    assert isinstance(e.value, StreamError)
    assert e.value.version == STREAM_FORMAT + 1 and e.value.line == 2
    assert str(e.value) == (
        f"line 2: stream format {STREAM_FORMAT + 1} is newer than this rtbench reads "
        f"(max {STREAM_FORMAT}); upgrade the host"
    )


def test_a_damaged_line_claiming_a_newer_version_is_just_damaged() -> None:
    # The CRC is checked first: a bit error in the version field is damage.
    line = record_line(1, 0, "hello", {}).replace("@rtb 1", "@rtb 3")
    assert only_issue(line).kind == "damaged"


# --- sequence numbers


def test_gap_names_the_lost_records() -> None:
    lines = small_stream()
    result = parse_lines([lines[0], lines[1], lines[4], lines[5]])
    assert [(i.kind, i.line, i.detail) for i in result.issues] == [
        ("gap", 3, "seq 4 follows 1: 2 records lost"),
        ("truncated", 4, "incomplete: bye counts 6 records written, 4 arrived"),
    ]
    assert [r.seq for r in result.records] == [0, 1, 4, 5]


def test_gap_at_the_start() -> None:
    lines = small_stream()
    result = parse_lines(lines[1:])
    assert result.issues[0] == StreamIssue("gap", "seq 1 is the first record: 1 record lost", 1)


def test_duplicate_keeps_the_first_copy() -> None:
    lines = small_stream()
    other = record_line(1, 1, "begin", {"case": "B"})
    result = parse_lines([lines[0], lines[1], other, lines[1], *lines[2:]])
    assert [(i.kind, i.line, i.detail) for i in result.issues] == [
        ("duplicate", 3, "seq 1 repeats line 2; the first copy is kept"),
        ("duplicate", 4, "seq 1 repeats line 2; the first copy is kept"),
    ]
    assert result.records[1].body["case"] == "A"
    assert len(result.records) == 6


def test_out_of_order_is_put_back_not_lost() -> None:
    lines = small_stream()
    result = parse_lines([lines[0], lines[2], lines[1], *lines[3:5], lines[5]])
    assert [(i.kind, i.line, i.detail) for i in result.issues] == [
        ("order", 3, "seq 1 arrives after seq 2; put back")
    ]
    assert [r.seq for r in result.records] == list(range(6))


def test_bye_before_the_last_record_is_not_loss() -> None:
    lines = small_stream()
    result = parse_lines([*lines[:4], lines[5], lines[4]])
    assert issues(result) == [("order", 6)]
    assert [r.kind for r in result.records][-1] == "bye"


def test_a_late_record_fills_only_its_own_hole() -> None:
    lines = small_stream()
    # seq 1 arrives late, seq 3 never: one record lost, not two.
    result = parse_lines([lines[0], lines[2], lines[1], lines[4], lines[5]])
    assert [(i.kind, i.line, i.detail) for i in result.issues] == [
        ("order", 3, "seq 1 arrives after seq 2; put back"),
        ("gap", 4, "seq 4 follows 2: 1 record lost"),
        ("truncated", 5, "incomplete: bye counts 6 records written, 5 arrived"),
    ]


def test_a_record_breaking_its_schema_is_damaged_but_arrived() -> None:
    w = StreamWriter()
    w.hello()
    w.record("summary", {"case": "A", "series": "s", "n": -1, "sum": 0})
    w.bye()
    result = parse_lines(w.lines)
    assert [(i.kind, i.line) for i in result.issues] == [("damaged", 2)]
    assert "summary record: 'n' = -1 is outside 0.." in result.issues[0].detail
    assert [r.kind for r in result.records] == ["hello", "bye"]


def test_a_damaged_line_leaves_a_gap() -> None:
    lines = small_stream()
    lines[2] = lines[2][:30] + "\n"
    result = parse_lines(lines)
    assert issues(result) == [("damaged", 3), ("gap", 4), ("truncated", 6)]


# --- the end of the stream


def test_no_records_at_all() -> None:
    result = parse_lines(["just\n", "noise\n"])
    assert [(i.kind, i.line, i.detail) for i in result.issues] == [
        ("truncated", 2, "no records in the stream")
    ]
    assert parse_lines([]).issues == [StreamIssue("truncated", "no records in the stream", 0)]


def test_no_bye() -> None:
    result = parse_lines(small_stream()[:4])
    assert [(i.kind, i.line, i.detail) for i in result.issues] == [
        ("truncated", 4, "no bye: the last record is seq 3, line 4")
    ]


def test_bye_with_a_wrong_count() -> None:
    w = StreamWriter()
    w.hello()
    w.record("bye", {"result": "passed", "records": 5})
    result = parse_lines(w.lines)
    assert issues(result) == [("truncated", 2)]
    assert "bye counts 5 records written, 2 arrived" in result.issues[0].detail


def test_finish_is_idempotent_and_feed_is_incremental() -> None:
    parser = StreamParser()
    for line in small_stream()[:3]:
        parser.feed(line)
    assert len(parser.records) == 3 and parser.issues == []
    first = parser.finish()
    second = parser.finish()
    assert issues(first) == issues(second) == [("truncated", 3)]


def test_parse_file_reads_bytes(tmp_path: Path) -> None:
    path = tmp_path / "run.rtb"
    lines = small_stream()
    path.write_bytes(b"noise \xff\r\n" + "".join(lines).encode())
    result = parse_file(path)
    assert issues(result) == []
    assert len(result.records) == 6 and result.log == ["noise \ufffd"]
