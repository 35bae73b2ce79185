"""A streamed series (rtb_series_init_streamed: a board's sample buffer
holds one record's worth and sends it between measured windows) reaches the
host as the same series a held one gives: every sample at its index, the
samples adding up exactly to the series' own summary (n, sum, min, max),
no holes. The test build's `--inject series_buffer=N` buffers N samples, so
a run of a known sample count comes in a known number of chunks; without it
the POSIX port holds the whole series and sends it in one record.

A lost chunk is visible (the negative control: a samples record taken out
of the stream leaves a hole of its size and a sum that no longer matches)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtbench.stream.assemble import assemble
from rtbench.stream.parser import parse_lines

N = 1000  # SEM-NEW: one sample per iteration in each of its four series
CASE = f"SEM-NEW:iterations={N}"


def samples_records(stdout: bytes) -> list[tuple[str, int, int]]:
    """(series and point, offset, count) of each samples record, in order."""
    out = []
    for line in stdout.decode().splitlines():
        if " samples " in line:
            m = re.search(
                r'"series":"(\w+)","point":(\{[^}]*\}).*"offset":(\d+),"count":(\d+)', line
            )
            assert m, line
            out.append((m[1] + m[2], int(m[3]), int(m[4])))
    return out


def exact(run: Any) -> dict[str, tuple[int, int, int]]:
    """Per series: samples reassembled, holes, and whether they add up to the summary."""
    case = run.case("SEM-NEW")
    assert case is not None and case.outcome == "passed", case
    out = {}
    for s in case.series:
        assert s.samples is not None, s.label
        assert s.n == N and s.dropped == 0, (s.label, s.n, s.dropped)
        adds_up = (int(s.samples.sum()), s.samples.min(), s.samples.max()) == (s.sum, s.min, s.max)
        out[f"{s.name}{s.point}"] = (len(s.samples), s.holes, int(adds_up))
    return out


def test_a_streamed_series_is_reassembled_exactly(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    held = run_agent(test_agent, [CASE])
    assert held.code == 0, held.stderr
    recs = samples_records(held.stdout)
    assert len(recs) == 4 and all(off == 0 and n == N for _, off, n in recs), recs
    assert set(exact(held.run).values()) == {(N, 0, 1)}

    streamed = run_agent(test_agent, ["--inject", "series_buffer=64", CASE])
    assert streamed.code == 0, streamed.stderr
    recs = samples_records(streamed.stdout)
    by_series: dict[str, list[tuple[int, int]]] = {}
    for key, off, n in recs:
        by_series.setdefault(key, []).append((off, n))
    assert len(by_series) == 4
    for key, chunks in by_series.items():
        # 15 full chunks of 64 sent as they filled, the last 40 at the end.
        assert chunks == [(64 * i, 64) for i in range(15)] + [(960, 40)], (key, chunks)
    assert set(exact(streamed.run).values()) == {(N, 0, 1)}
    assert not streamed.parsed.issues


def test_a_lost_chunk_is_a_hole(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    r = run_agent(test_agent, ["--inject", "series_buffer=64", CASE])
    lines = r.stdout.splitlines()
    lost = next(i for i, x in enumerate(lines) if b" samples " in x and b'"offset":128,' in x)
    parsed = parse_lines(lines[:lost] + lines[lost + 1 :])
    run = assemble(parsed.records, parsed.issues, parsed.log)
    figures = exact(run)
    damaged = [k for k, v in figures.items() if v != (N, 0, 1)]
    assert len(damaged) == 1 and figures[damaged[0]] == (N - 64, 64, 0), figures


def test_a_streamed_series_keeps_max_samples(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    """max_samples bounds the samples sent in all, not the buffer: the rest are
    dropped (counted, in the histogram and summary), never a hole."""
    r = run_agent(test_agent, ["--max-samples", "300", "--inject", "series_buffer=64", CASE])
    case = r.run.case("SEM-NEW")
    assert case is not None and case.outcome == "passed"
    for s in case.series:
        assert s.samples is not None and len(s.samples) == 300, s.label
        assert s.n == N and s.dropped == N - 300 and s.holes == 0, (s.n, s.dropped, s.holes)
    by_series: dict[str, list[tuple[int, int]]] = {}
    for key, off, n in samples_records(r.stdout):
        by_series.setdefault(key, []).append((off, n))
    want = [(0, 64), (64, 64), (128, 64), (192, 64), (256, 44)]
    assert len(by_series) == 4 and all(c == want for c in by_series.values()), by_series
