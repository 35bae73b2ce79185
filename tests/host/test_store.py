"""The run store on SQLite and on PostgreSQL alike (the `store_at` fixture):
round trip, listing, labels, references, deletion (test_store_schema.py:
locations and migrations; test_store_hosts.py: many hosts at once)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from stores import StoreAt, simple_run

from rtbench.model import CaseResult, Check, Histogram, Run, Series, StreamIssue, Warning
from rtbench.store import (
    Store,
    StoreError,
    decode_samples,
    encode_samples,
)
from rtbench.store.codec import CHUNK_SAMPLES, ZLIB_ENCODING

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
TABLES = ("runs", "labels", "cases", "series", "checks", "warnings", "issues", "log", "chunks")


def rich_run() -> Run:
    """A run that uses every field of the model, with awkward values."""
    extremes = np.array([I64_MIN, -1, 0, 1, I64_MAX, 812, 48213], dtype=np.int64)
    hist = Histogram(
        layout={"kind": "log2", "sub_bits": 5},
        counts=[(26, 3), (27, 90), (700, 1)],
        n=100,
        min=812,
        max=2**64 - 1,
        sum=2**64 + 12345,
        underflow=4,
        overflow=2,
    )
    switch_2 = Series(
        case="THR-SW",
        name="switch",
        point={"n": 2},
        samples=extremes,
        holes=512,
        hist=hist,
        n=100,
        min=I64_MIN,
        max=I64_MAX,
        sum=2**63 + 7,
        dropped=3,
    )
    switch_128 = Series(
        case="THR-SW",
        name="switch",
        point={"n": 128, "mode": "pin"},
        unit="cycles",
        samples=np.array([], dtype=np.int64),
        n=0,
        sum=-(2**70),
    )
    hist_only = Series(
        case="THR-SW",
        name="wake",
        hist=Histogram(
            layout={"kind": "linear", "lo": -5, "width": 10, "buckets": 4},
            counts=[],
            n=0,
            min=0,
            max=0,
            sum=0,
        ),
        n=5,
        min=-3,
        max=9,
        sum=10,
    )
    cal = CaseResult(
        case="CAL-REF",
        title="Reference unit",
        params={"iterations": 1000, "scale": 0.5, "tags": ["a", "b"], "none": None},
        outcome="passed",
        duration_ns=I64_MAX,
        series=[Series(case="CAL-REF", name="t_std", n=4, min=10, max=30, sum=80)],
    )
    thr = CaseResult(
        case="THR-SW",
        title='Switch "same priority" – ünïcode',
        params={"n": [2, 5, 128], "deadline_ms": 3600, "big": 2**64 - 1},
        outcome="failed",
        duration_ns=412_000_000,
        series=[switch_2, switch_128, hist_only],
        checks=[
            Check("THR-SW", "order", "pass", "B ran after A in 10000 of 10000"),
            Check("THR-SW", "bound", "fail", "max 48213 > 't' \"limit\""),
            Check("OTHER", "odd", "error"),
        ],
        warnings=[Warning("overrun", "3 overruns", "THR-SW"), Warning("clamped", "no case field")],
    )
    unsupported = CaseResult(
        case="MSG-Q", outcome="unsupported", reason="port has no message queues"
    )
    return Run(
        hello={
            "format": 1,
            "os": {"sysname": "Linux", "release": "6.1.0-rt", "machine": "x86_64"},
            "clock": {"cycles": {"available": True, "hz": 2**64 - 1}},
            "realtime": {"ok": True, "policy": "SCHED_FIFO", "detail": ""},
            "params": {"cases": ["CAL-REF", "THR-SW"], "lone": "\ud800"},
        },
        cases=[cal, thr, unsupported],
        warnings=[Warning("not_realtime", "run-wide"), Warning("affinity", "pinned", "THR-SW")],
        issues=[
            StreamIssue("order", "seq 12 put back", 12),
            StreamIssue("duplicate", "seq 4 again"),
        ],
        bye={"result": "failed", "records": 57},
        log=[
            "[    0.1] boot",
            "",
            "ünï \"quoted\" 'line'",
            "bad byte \udcff here",
            "nul \x00 byte",
        ],
        started_at="2024-05-01T12:00:00Z",
        target="ssh:box",
        labels={"os": 'Linux "rt" ’ü’', "note": "it's; DROP TABLE runs;--", "\x01k": "\x01{}"},
        machine={"cpu": {"model": "Xeon", "count": 2}, "mem": 2**40},
        source="ingest FILE",
    )


def plain(obj: Any) -> Any:
    """A comparable form: numpy arrays become (dtype, values), the rest recurses."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (
            type(obj).__name__,
            {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)},
        )
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.tolist())
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(plain(v) for v in obj)
    return obj


@pytest.fixture
def store(store_at: StoreAt) -> Iterator[Store]:
    with store_at.open() as s:
        yield s


def count_rows(at: StoreAt, run_id: int) -> dict[str, int]:
    with at.raw() as db:
        return {
            t: db.one(
                f"SELECT count(*) FROM {t} WHERE {'id' if t == 'runs' else 'run_id'} = ?",
                (run_id,),
            )
            for t in TABLES
        }


# --- round trip ----------------------------------------------------------


def test_round_trip_of_a_rich_run(store: Store) -> None:
    run = rich_run()
    before = plain(run)
    run_id = store.save(run)
    assert run.id == run_id
    after = plain(run)
    assert plain(store.load(run_id)) == after
    # save changed nothing but the id and (a run without one) the identity
    assert before[1] | {"id": run_id, "uuid": run.uuid} == after[1]


def test_round_trip_details(store: Store) -> None:
    run = rich_run()
    loaded = store.load(store.save(run))
    series = loaded.cases[1].series
    samples = series[0].samples
    assert samples is not None
    assert samples.dtype == np.int64 and samples.dtype.isnative and samples.flags.writeable
    assert samples.tolist()[:5] == [I64_MIN, -1, 0, 1, I64_MAX]
    assert series[0].sum == 2**63 + 7 and series[1].sum == -(2**70)
    assert series[1].samples is not None and series[1].samples.size == 0
    assert series[2].samples is None and series[2].hist is not None
    hist = series[0].hist
    assert hist is not None and hist.counts[0] == (26, 3) and hist.sum == 2**64 + 12345
    assert hist.layout == {"kind": "log2", "sub_bits": 5}
    assert hist.bucket_bounds(700) == (60 << 20, 61 << 20)
    assert loaded.cases[2].series == [] and loaded.cases[2].outcome == "unsupported"
    assert [w.case for w in loaded.warnings] == [None, "THR-SW"]
    assert [w.case for w in loaded.cases[1].warnings] == ["THR-SW", None]
    assert [i.line for i in loaded.issues] == [12, None]
    assert loaded.log[3] == "bad byte \udcff here" and loaded.log[4] == "nul \x00 byte"
    assert loaded.labels["\x01k"] == "\x01{}"
    assert loaded.hello["params"]["lone"] == "\ud800"
    assert loaded.outcome == run.outcome == "failed"
    assert loaded.t_std_ns == 20.0


def test_samples_encoding_round_trips_and_compresses() -> None:
    rng = np.random.default_rng(7)
    values = (800 + rng.gamma(2.0, 50.0, 100_000)).astype(np.int64)
    count, blob = encode_samples(values)
    assert count == values.size and len(blob) < values.nbytes / 4
    assert np.array_equal(decode_samples(count, blob), values)
    with pytest.raises(StoreError, match="damaged"):
        decode_samples(count + 1, blob)
    with pytest.raises(StoreError, match="int64"):
        encode_samples(np.array([1.5]))
    with pytest.raises(StoreError, match="unknown samples encoding"):
        decode_samples(count, blob, "i64le-raw")


def test_long_series_are_stored_in_chunks_and_load_into_one_array(
    store: Store, store_at: StoreAt, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A series longer than a chunk is several rows of `chunks`, each at
    most CHUNK_SAMPLES, and loads back exactly, as one fresh int64 array
    (each chunk sent in a batch of its own here: the batches' seams)."""
    monkeypatch.setattr("rtbench.store.rows._BATCH_BYTES", 1)
    run = simple_run()
    n = 2 * CHUNK_SAMPLES + 5
    values = np.arange(n, dtype=np.int64) * 7919 % 100_003 - 50_000
    values[[0, -1]] = [-(2**63), 2**63 - 1]
    run.cases[0].series.append(Series("CAL-TIMER", "s", samples=values))
    run_id = store.save(run)
    with store_at.raw() as db:
        sizes = db.execute(
            "SELECT n FROM chunks WHERE run_id = ? ORDER BY case_pos, series_pos, seq", (run_id,)
        )
    assert [r[0] for r in sizes] == [CHUNK_SAMPLES, CHUNK_SAMPLES, 5]
    got = store.load(run_id).cases[0].series[0].samples
    assert got is not None and got.dtype == np.int64 and got.flags.owndata
    assert np.array_equal(got, values)


def test_samples_blob_of_any_zlib_level_decodes_to_one_fresh_array() -> None:
    """Runs stored before zstd (schema < 5: zlib, at its default level or at
    level 1) read back alike; the result is native int64, writable, and owns
    its memory (no view of the decompressed bytes)."""
    import zlib

    values = np.array([-(2**63), -1, 0, 1, 2**63 - 1, 1000, 1001, -5], dtype=np.int64)
    planes = values.view(np.uint8).reshape(-1, 8).T.tobytes()
    for level in (1, 6, 9):
        out = decode_samples(values.size, zlib.compress(planes, level), ZLIB_ENCODING)
        assert out.dtype == np.int64 and out.flags.writeable and out.flags.owndata
        assert np.array_equal(out, values)


def test_bad_values_are_refused_and_leave_nothing(store: Store, store_at: StoreAt) -> None:
    run = rich_run()
    run.labels[""] = "empty key"
    with pytest.raises(StoreError, match="label key"):
        store.save(run)
    run = simple_run()
    run.cases[0].series.append(Series("CAL-TIMER", "x", n=1.5))  # type: ignore[arg-type]
    with pytest.raises(StoreError, match=r"n = 1\.5 is not an integer"):
        store.save(run)
    assert run.id is None
    assert store.list_runs() == []
    assert count_rows(store_at, 1) == dict.fromkeys(TABLES, 0)


def test_every_wire_integer_round_trips_exactly(store: Store) -> None:
    # The wire format's integers fill int64 and uint64; sums are 128-bit.
    u64 = 2**64 - 1
    run = simple_run()
    run.cases[0].duration_ns = u64
    big = Series("CAL-TIMER", "big", n=u64, min=I64_MIN, max=u64, sum=2**127 - 1, dropped=u64)
    big.holes = 2**65  # offsets + counts of chunks may pass 2**64
    run.cases[0].series.append(big)
    loaded = store.load(store.save(run))
    assert loaded.cases[0].duration_ns == u64
    got = loaded.cases[0].series[-1]
    assert (got.n, got.min, got.max, got.sum, got.dropped, got.holes) == (
        u64,
        I64_MIN,
        u64,
        2**127 - 1,
        u64,
        2**65,
    )


def test_a_crash_mid_save_leaves_no_half_run(
    store: Store, store_at: StoreAt, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(samples: Any) -> Any:
        raise KeyboardInterrupt  # as if the user hit ^C while the run was written

    monkeypatch.setattr("rtbench.store.rows.encode_chunks", crash)
    run = rich_run()
    with pytest.raises(KeyboardInterrupt):
        store.save(run)
    monkeypatch.undo()
    assert store.list_runs() == []
    assert count_rows(store_at, 1) == dict.fromkeys(TABLES, 0)
    assert store.save(simple_run()) >= 1  # the connection is still usable


# --- listing and labels --------------------------------------------------


def test_list_runs_and_label_filters(store: Store) -> None:
    a = store.save(simple_run(os="linux", board="pi"))
    rich = rich_run()
    b = store.save(rich)
    c = store.save(simple_run(os="zephyr"))
    runs = store.list_runs()
    assert [r.id for r in runs] == [a, b, c]
    rb = runs[1]
    assert (rb.target, rb.outcome, rb.realtime, rb.cases, rb.kernel) == (
        "ssh:box",
        "failed",
        True,
        3,
        "6.1.0-rt",
    )
    assert rb.started_at == "2024-05-01T12:00:00Z"
    assert rb.labels == rich.labels
    assert (runs[0].outcome, runs[0].realtime, runs[0].kernel) == ("passed", False, "6.6.0")
    assert [r.id for r in store.list_runs({"os": "zephyr"})] == [c]
    assert [r.id for r in store.list_runs({"os": None})] == [a, b, c]
    assert [r.id for r in store.list_runs({"os": "linux", "board": "pi"})] == [a]
    assert store.list_runs({"os": "linux", "board": "x86"}) == []
    assert [r.id for r in store.list_runs({"note": "it's; DROP TABLE runs;--"})] == [b]


def test_set_labels_replace_and_merge(store: Store) -> None:
    run_id = store.save(simple_run(os="linux", board="pi"))
    store.set_labels(run_id, {"board": "pi5", "os": None, "q": 'a "b"'}, merge=True)
    assert store.load(run_id).labels == {"board": "pi5", "q": 'a "b"'}
    store.set_labels(run_id, {"only": "this"})
    assert store.list_runs()[0].labels == {"only": "this"}
    with pytest.raises(StoreError, match="no run"):
        store.set_labels(run_id + 1, {"x": "y"})


def test_kernel_falls_back_to_the_machine_probe(store: Store) -> None:
    run = simple_run()
    run.hello = {}
    # as rtbench.machine.probe writes it
    run.machine = {"kernel_release": "5.15.0-probe", "cpu_count": 2}
    store.save(run)
    assert store.list_runs()[0].kernel == "5.15.0-probe"


# --- references ----------------------------------------------------------


def test_resolve(store: Store) -> None:
    with pytest.raises(StoreError, match="no runs yet"):
        store.resolve("latest")
    ids = [store.save(simple_run()) for _ in range(3)]
    assert store.resolve("latest") == store.resolve("last") == store.resolve("-1") == ids[-1]
    assert store.resolve("-2") == ids[1] == store.list_runs()[-2].id
    assert store.resolve("-3") == ids[0]
    assert store.resolve(str(ids[1])) == store.resolve(ids[1]) == store.resolve(f" {ids[1]} ")
    assert store.resolve("LATEST") == ids[-1]


@pytest.mark.parametrize("ref", ["99", "-4", "0", "9" * 30, "-" + "9" * 30])
def test_resolve_unknown_lists_what_exists(store: Store, ref: str) -> None:
    for _ in range(3):
        store.save(simple_run())
    with pytest.raises(StoreError, match=r"no run .* ids 1-3"):
        store.resolve(ref)


@pytest.mark.parametrize("ref", ["foo", "-0", "1.5", "", "²"])
def test_resolve_rejects_what_is_no_reference(store: Store, ref: str) -> None:
    store.save(simple_run())
    with pytest.raises(StoreError, match="not a run reference"):
        store.resolve(ref)


# --- deletion ------------------------------------------------------------


def test_delete_cascades(store: Store, store_at: StoreAt) -> None:
    rich = rich_run()
    first = store.save(rich)
    rich2 = rich_run()
    second = store.save(rich2)
    assert all(n > 0 for n in count_rows(store_at, first).values())
    store.delete(first)
    assert count_rows(store_at, first) == dict.fromkeys(TABLES, 0)
    assert plain(store.load(second)) == plain(rich2)
    with pytest.raises(StoreError, match=rf"no run '{first}'.*ids {second}\b"):
        store.load(first)
    with pytest.raises(StoreError, match="no run"):
        store.delete(first)


def test_ids_are_not_reused_after_delete(store: Store) -> None:
    ids = [store.save(simple_run()) for _ in range(3)]
    store.delete(ids[-1])
    assert store.save(simple_run()) == ids[-1] + 1


# --- stored figures are the figures ----------------------------------------


def _stored_streams() -> list[Path]:
    corpus = Path(__file__).resolve().parents[1] / "corpus"
    return sorted(p for p in corpus.glob("*.rtb") if p.name != "damaged_newer_version.rtb")


def _long_stream(path: Path) -> Path:
    """A quick-suite-like case with a series spanning several store chunks
    (and its log2 histogram, so that the percentiles take the guided path)."""
    from rtbench.stream.writer import StreamWriter, default_hello

    rng = np.random.default_rng(22)
    values = (900 + rng.gamma(2.0, 60.0, 2 * CHUNK_SAMPLES + 777)).astype(np.int64).tolist()
    counts: dict[int, int] = {}
    for v in values:  # log2 buckets with 3 sub-bits, as the agent counts them
        shift = max(0, v.bit_length() - 4)
        index = (shift << 3) + (v >> shift)
        counts[index] = counts.get(index, 0) + 1
    stats = {"n": len(values), "min": min(values), "max": max(values), "sum": sum(values)}
    with path.open("w") as f:
        w = StreamWriter(f)
        w.hello(default_hello(["CAL-TIMER"]))
        w.begin("CAL-TIMER", "Timer calibration", {"cpu": 0})
        w.samples("CAL-TIMER", "clock_read", values, chunk=4096)
        layout = {"kind": "log2", "sub_bits": 3}
        w.hist("CAL-TIMER", "clock_read", layout=layout, counts=sorted(counts.items()), **stats)
        w.summary("CAL-TIMER", "clock_read", **stats)
        w.end("CAL-TIMER", "passed", duration_ns=1)
        w.bye("passed")
    return path


def test_stored_figures_are_the_streams_figures(store: Store, tmp_path: Path) -> None:
    """Every corpus stream and a long one: what a stored run loads back (raw
    samples, dtype, and every statistic show/analyze/report print) is what
    the stream gave before it was stored."""
    from rtbench.analysis.stats import case_stats, guided_percentiles
    from rtbench.run.measure import read_stream

    for path in [*_stored_streams(), _long_stream(tmp_path / "long.rtb")]:
        run = read_stream(path)
        loaded = store.load(store.save(run, copy=True))
        before = [s for c in run.cases for s in c.series]
        after = [s for c in loaded.cases for s in c.series]
        assert [s.key for s in after] == [s.key for s in before], path.name
        for b, a in zip(before, after, strict=True):
            if b.samples is None:
                assert a.samples is None, (path.name, b.label)
            else:
                assert a.samples is not None and a.samples.dtype == np.int64
                assert np.array_equal(a.samples, b.samples), (path.name, b.label)
            assert (a.n, a.min, a.max, a.sum, a.holes, a.hist) == (
                b.n, b.min, b.max, b.sum, b.holes, b.hist,
            )  # fmt: skip
            assert repr(case_stats(a)) == repr(case_stats(b)), (path.name, b.label)
    hist, samples = a.hist, a.samples  # the long series: its histogram guides
    assert hist is not None and samples is not None and len(samples) > 2 * CHUNK_SAMPLES
    assert guided_percentiles(samples, hist) is not None
