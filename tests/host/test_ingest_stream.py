"""Samples taken in as they arrive (issue 22, item 3): `stream.Assembler`
places each chunk when it comes and spills whole store chunks to disk
(`store.spill`), and must give what placing every chunk after the stream
ended gives (sorted by offset, then record order; a chunk that does not
decode or overlaps samples already placed is left out and reported), the
definition written out here as the reference. Batches and the in-memory
bound are made tiny so that every path runs on a short stream."""

from __future__ import annotations

import importlib
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtbench.model import Run
from rtbench.store import Store, StoreError
from rtbench.store import spill as spill_module
from rtbench.store.spill import SpilledSamples
from rtbench.stream import StreamWriter, assemble_lines, encode_zzd, parse_lines
from rtbench.stream.codec import CodecError, decode_chunks

CHUNK = 997
# The module (the package's `assemble` is its function).
assemble_module = importlib.import_module("rtbench.stream.assemble")


def _bodies(series: str, values: list[int], point: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for start in range(0, len(values), CHUNK):
        part = values[start : start + CHUNK]
        body: dict[str, Any] = {"case": "C", "series": series, "unit": "ns"}
        body["enc"] = "zzd-varint-b64"
        if point:
            body["point"] = point
        body |= {"offset": start, "count": len(part), "data": encode_zzd(part)}
        out.append(body)
    return out


def damaged_stream(seed: int) -> list[str]:
    rnd = random.Random(seed)
    w = StreamWriter()
    w.hello()
    w.begin("C")
    a = _bodies("a", [rnd.randrange(-500, 10**6) for _ in range(40_000)], None)
    b = _bodies("b", [rnd.randrange(0, 10**4) for _ in range(30_000)], {"n": 2})
    c = _bodies("c", [rnd.randrange(0, 10**3) for _ in range(20_000)], None)
    a[5] = a[5] | {"data": "!!" + a[5]["data"][2:]}  # does not decode
    a.insert(9, dict(a[8]))  # sent twice
    a.insert(20, a[3] | {"offset": a[19]["offset"] + 3})  # overlaps
    a[30] = a[30] | {"count": a[30]["count"] + 1}  # count does not match
    b[10], b[14] = b[14], b[10]  # out of order
    c.reverse()
    streams = [a, b, c]
    while streams:
        i = rnd.randrange(len(streams))
        w.record("samples", streams[i].pop(0))
        streams = [s for s in streams if s]
    w.summary("C", "a", n=41_000, min=0, max=1, sum=1)
    w.end("C")
    w.bye()
    lines = "".join(w.lines).splitlines()
    if seed % 2:  # a transport that swapped lines
        for i in range(3, len(lines) - 3, 7):
            lines[i], lines[i + 2] = lines[i + 2], lines[i]
    return lines


def reference(lines: list[str]) -> dict[str, tuple[list[int], set[int]]]:
    """Per series: its samples and the lines of its damaged chunks, by the
    definition (every chunk placed once the stream ended)."""
    records = parse_lines(lines).records  # in seq order
    out: dict[str, tuple[list[int], set[int]]] = {}
    chunks: dict[str, list[Any]] = {}
    for r in records:
        if r.kind == "samples":
            chunks.setdefault(r.body["series"], []).append(r)
    for name, rs in chunks.items():
        values: list[int] = []
        bad: set[int] = set()
        end = 0
        for r in sorted(rs, key=lambda r: r.body["offset"]):
            try:
                v = decode_chunks([(r.body["data"], r.body["count"])])
            except CodecError:
                bad.add(r.line)
                continue
            if r.body["offset"] < end:
                bad.add(r.line)
                continue
            values += v.tolist()
            end = r.body["offset"] + r.body["count"]
        out[name] = (values, bad)
    return out


def streamed(lines: list[str]) -> Run:
    return assemble_lines(lines)


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assemble_module, "_BATCH_SAMPLES", 3000)
    monkeypatch.setattr(spill_module, "PENDING_SAMPLES", 5000)
    monkeypatch.setattr(spill_module, "SHORT_ENDS", 5000)
    monkeypatch.setattr(spill_module, "CHUNK_SAMPLES", 4096)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_streamed_is_every_chunk_placed_at_the_end(tiny: None, seed: int) -> None:
    lines = damaged_stream(seed)
    want = reference(lines)
    run = streamed(lines)
    series = {s.name: s for s in run.cases[0].series}
    assert sorted(series) == sorted(want)
    # The series in order went to the spill (with swapped lines, a's chunk
    # sent twice may come out of order); those out of order (b, and c
    # reversed) were placed again whole at the end.
    assert isinstance(series["a"].chunked, SpilledSamples) or seed % 2
    assert not isinstance(series["c"].chunked, SpilledSamples)
    damaged = {i.line for i in run.issues if i.kind == "damaged"}
    for name, (values, bad) in want.items():
        s = series[name]
        assert s.samples is not None and s.samples.tolist() == values, name
        assert bad <= damaged, name
    assert damaged == set().union(*(bad for _, bad in want.values()))
    assert series["a"].holes == 41_000 - len(want["a"][0])  # the summary's n
    # The list API (records given in order) builds the same run.
    parsed = parse_lines(lines)
    again = assemble_module.assemble(parsed.records, parsed.issues, parsed.log)
    assert [str(i) for i in again.issues] == [str(i) for i in run.issues]
    for s in again.cases[0].series:
        assert s.samples is not None and s.samples.tolist() == want[s.name][0]


def test_spilled_chunks_are_stored_as_they_are(tiny: None, tmp_path: Path) -> None:
    run = streamed(damaged_stream(2))
    a = next(s for s in run.cases[0].series if s.name == "a")
    assert isinstance(a.chunked, SpilledSamples)
    blobs = [blob for _, blob in a.chunked.encoded()]
    assert len(blobs) > 1 and all(n <= 4096 for n, _ in a.chunked.encoded())
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = store.save(run)
        stored = [
            bytes(r["data"])
            for r in store._db.rows(
                "SELECT data FROM chunks WHERE run_id = ? AND case_pos = 0 AND series_pos = ?"
                " ORDER BY seq",
                (run_id, run.cases[0].series.index(a)),
            )
        ]
        loaded = store.load(run_id)
    assert stored == blobs  # copied, not encoded again
    for s, t in zip(run.cases[0].series, loaded.cases[0].series, strict=True):
        assert s.samples is not None and t.samples is not None
        assert np.array_equal(s.samples, t.samples) and s.holes == t.holes


def _long_stream(n: int) -> list[str]:
    w = StreamWriter()
    w.hello()
    w.begin("C")
    for body in _bodies("a", [(i * 7919) % 1000 for i in range(n)], None):
        w.record("samples", body)
    w.end("C")
    w.bye()
    return "".join(w.lines).splitlines()


@pytest.mark.parametrize("budget", ["", "0", "1"])
def test_the_budget_decides_what_is_held_and_the_samples_are_the_same(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, budget: str
) -> None:
    """RTBENCH_INGEST_MIB: a run under the budget is held (no chunk encoded
    twice), one over it (0 MiB: every whole chunk at once) is spilled; the
    store gets the same chunks and samples either way."""
    monkeypatch.setattr(assemble_module, "_BATCH_SAMPLES", 3000)
    monkeypatch.setattr(spill_module, "CHUNK_SAMPLES", 4096)
    monkeypatch.setenv("RTBENCH_INGEST_MIB", budget)
    monkeypatch.setattr(spill_module, "PENDING_SAMPLES", 20_000)  # the default, in samples
    lines = _long_stream(30_000)
    (a,) = streamed(lines).cases[0].series
    # 1 MiB holds 131,072 samples; the default (20,000 here) and 0 hold fewer.
    held = budget == "1"
    assert isinstance(a.chunked, spill_module.HeldSamples) == held, type(a.chunked)
    assert isinstance(a.chunked, SpilledSamples) != held, type(a.chunked)
    assert a.chunked is not None and [c.size for c in a.chunked.chunks()] == [4096] * 7 + [1328]
    want = np.array([(i * 7919) % 1000 for i in range(30_000)], dtype=np.int64)
    assert a.samples is not None and np.array_equal(a.samples, want)
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = store.save(streamed(lines))
        (t,) = store.load(run_id).cases[0].series
        sql = "SELECT n FROM chunks WHERE run_id = ? ORDER BY seq"
        counts = [r["n"] for r in store._db.rows(sql, (run_id,))]
    assert t.samples is not None and np.array_equal(t.samples, want)
    assert counts == [4096] * 7 + [1328], counts


@pytest.mark.parametrize("bad", ["lots", "-1", "1.5"])
def test_a_budget_that_is_not_a_size_is_said(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("RTBENCH_INGEST_MIB", bad)
    with pytest.raises(StoreError, match=r"RTBENCH_INGEST_MIB=.*whole number of MiB"):
        streamed(_long_stream(10))
