"""C writer -> Python parser: every record kind, with extreme values and
hostile strings, written by the agent's own JSON and stream writers
(tests/agent/roundtrip.c) and read back exactly by the host."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rtbench.stream import assemble, parse_lines

I64_MIN, I64_MAX, U64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
HOSTILE = (
    'q"uote b\\ack nl\nnl tab\t cr\r ctl\x01\x1f del\x7f utf8 \u00b5s \u2713 \u65e5\u672c'
)
EXTREMES = [0, I64_MAX, I64_MIN, -1, 1, I64_MAX, I64_MIN, 0, 42]


@pytest.fixture(scope="module")
def stream(test_agent: Path) -> bytes:
    exe = test_agent.parent / "rtbench-roundtrip"
    return subprocess.run([str(exe)], capture_output=True, check=True, timeout=60).stdout


def test_every_record_parses_intact(stream: bytes) -> None:
    parsed = parse_lines(stream.splitlines())
    assert parsed.issues == []
    kinds = {r.kind for r in parsed.records}
    assert kinds == {"hello", "warn", "begin", "summary", "hist", "samples", "check", "end", "bye"}


def test_extreme_integers_and_strings(stream: bytes) -> None:
    parsed = parse_lines(stream.splitlines())
    run = assemble(parsed.records, parsed.issues, parsed.log)
    h = run.hello
    assert (h["u64_max"], h["i64_min"], h["i64_max"], h["zero"]) == (U64_MAX, I64_MIN, I64_MAX, 0)
    assert h["agent"] == HOSTILE
    case = run.case("RT-TRIP")
    assert case is not None
    assert case.title == HOSTILE and case.reason == HOSTILE
    assert case.params == {"lo": I64_MIN, "hi": I64_MAX}
    assert case.duration_ns == I64_MAX
    assert [(c.name, c.verdict) for c in case.checks] == [
        ("hostile", "pass"),
        ("failing", "fail"),
        ("broken", "error"),
        ("long", "pass"),
    ]
    assert case.checks[0].detail == HOSTILE
    # Clipped at 1023 bytes as formatted, every control byte escaped and
    # read back (the detail is written from the top of the record's body).
    longer = "".join("\x01" if i % 7 == 6 else chr(ord("a") + i % 7) for i in range(1499))
    assert case.checks[3].detail == longer[:1023]
    assert run.warnings[0].detail == HOSTILE and run.warnings[0].case is None


def test_samples_and_histograms_exact(stream: bytes) -> None:
    parsed = parse_lines(stream.splitlines())
    run = assemble(parsed.records, parsed.issues, parsed.log)
    case = run.case("RT-TRIP")
    assert case is not None
    x = case.find("extremes")
    assert x is not None and x.point == {"n": I64_MAX}
    expected = np.array(EXTREMES * 100, dtype=np.int64)
    assert x.samples is not None and np.array_equal(x.samples, expected)
    assert (x.n, x.min, x.max, x.sum) == (900, I64_MIN, I64_MAX, sum(EXTREMES) * 100)
    assert x.hist is not None and x.hist.underflow == 300  # the negative ones
    assert x.hist.bucket_bounds(x.hist.counts[-1][0])[0] <= I64_MAX < x.hist.bucket_bounds(
        x.hist.counts[-1][0]
    )[1]
    lin = case.find("linear")
    assert lin is not None and lin.hist is not None
    values = [-5000, -1000, -901, 0, 999, 1000, I64_MAX]
    assert lin.sum == sum(values)  # wider than 64 bits on the target: exact anyway
    assert (lin.hist.underflow, lin.hist.overflow) == (1, 2)
    assert dict(lin.hist.counts) == {0: 2, 10: 1, 19: 1}
    for idx, _ in lin.hist.counts:
        lo, hi = lin.hist.bucket_bounds(idx)
        assert any(lo <= v < hi for v in values)


def test_oversized_string_is_clipped_not_broken(stream: bytes) -> None:
    line = next(raw for raw in stream.splitlines() if b'"code":"big"' in raw)
    body = json.loads(line.split(b" ", 4)[4].rsplit(b" ", 1)[0])
    assert set(body["detail"]) == {"\u2713"}  # clipped on a character boundary
    assert "after" not in body  # what did not fit was left out, not half-written
