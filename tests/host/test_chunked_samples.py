"""ChunkedSamples: a series' samples a chunk at a time, the same values
whether they are an in-memory array or chunks read one by one."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from stores import StoreAt, simple_run

from rtbench.model import ArraySamples, ChunkedSamples, Int64Array, Series
from rtbench.store import StoreError
from rtbench.store.codec import CHUNK_SAMPLES
from rtbench.store.stored_samples import StoredSamples


class Uneven(ChunkedSamples):
    """Chunks of uneven lengths (as a store or a parser may give them)."""

    def __init__(self, values: Int64Array, sizes: list[int]) -> None:
        self.values, self.sizes = values, sizes

    def __len__(self) -> int:
        return int(self.values.size)

    def chunks(self) -> Iterator[Int64Array]:
        at = 0
        for n in self.sizes:
            yield self.values[at : at + n]
            at += n


def test_array_is_chunked_and_reads_back() -> None:
    values = np.arange(300_001, dtype=np.int64) * 3
    s = Series("X", "lat", samples=values)
    assert isinstance(s.chunked, ArraySamples)
    assert s.samples is values  # no copy
    assert s.n_kept == 300_001
    assert np.array_equal(np.concatenate(list(s.chunked.chunks())), values)
    assert np.array_equal(s.chunked.read(131_000, 131_100), values[131_000:131_100])


def test_read_across_uneven_chunks_and_whole_on_demand() -> None:
    values = np.arange(1000, dtype=np.int64) - 500
    data = Uneven(values, [1, 99, 400, 0, 500])
    for start, stop in [(0, 1000), (0, 1), (99, 101), (450, 950), (999, 2000), (-5, 3), (7, 7)]:
        assert np.array_equal(data.read(start, stop), values[max(start, 0) : stop])
    s = Series("X", "lat")
    assert s.samples is None and s.chunked is None and s.n_kept == 0
    s.chunked = data
    assert s.chunked is data  # not read until someone asks for the whole
    whole = s.samples
    assert whole is not None and np.array_equal(whole, values)
    assert s.samples is whole  # kept once made


def test_a_long_stored_series_is_read_a_chunk_at_a_time(
    store_at: StoreAt, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past EAGER_SAMPLES a loaded series reads its chunks from the store on
    each pass (its own connection: the store that loaded it is closed), the
    same values in the same chunks; a short one is read whole at the load.
    A run deleted after the load says so instead of giving fewer samples."""
    monkeypatch.setattr("rtbench.store.rows.EAGER_SAMPLES", CHUNK_SAMPLES)
    monkeypatch.setattr("rtbench.store.stored_samples._BATCH", 2)  # the batches' seams
    n = 3 * CHUNK_SAMPLES + 11
    values = np.arange(n, dtype=np.int64) * 7919 % 100_003 - 50_000
    values[-3] = 2**63 - 1
    run = simple_run()
    run.cases[0].series += [
        Series("CAL-TIMER", "long", samples=values),
        Series("CAL-TIMER", "short", samples=values[:CHUNK_SAMPLES]),
    ]
    with store_at.open() as store:
        run_id = store.save(run)
        loaded = store.load(run_id)
    long, short = loaded.cases[0].series
    assert isinstance(short.chunked, ArraySamples)
    data = long.chunked
    assert isinstance(data, StoredSamples) and len(data) == n and long.n_kept == n
    for _ in range(2):  # every pass reads again
        parts = list(data.chunks())
        assert [len(p) for p in parts] == [CHUNK_SAMPLES] * 3 + [11]
        assert np.array_equal(np.concatenate(parts), values)
    assert np.array_equal(data.read(n - 20, n + 5), values[-20:])
    with store_at.open() as store:
        store.delete(run_id)
    with pytest.raises(StoreError, match="0 of its"):
        data.array()


@pytest.mark.parametrize(
    "kind", ["int64 range", "few values", "latency", "spikes", "thin tail", "thick tail"]
)
def test_chunkwise_figures_are_the_whole_arrays(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact ranks, argmax, windows, block maxima and the min/max envelope
    of uneven chunks are numpy's on the whole array (gathering only small
    value ranges, so that the counting passes run too)."""
    from rtbench.analysis import chunkwise as cw
    from rtbench.analysis import ranks as rk
    from rtbench.analysis.evt import block_maxima
    from rtbench.reports.charts import downsample_minmax

    monkeypatch.setattr(rk, "GATHER", 1000)
    rng = np.random.default_rng(len(kind))
    for _ in range(5):
        n = int(rng.integers(300, 40_000))
        if kind == "int64 range":
            v = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True)
        elif kind == "few values":
            v = rng.integers(0, 5, n).astype(np.int64)
        elif kind == "latency":
            v = (1000 + rng.gamma(2, 60, n)).astype(np.int64)
        elif kind in ("thin tail", "thick tail"):
            # A body near the minimum, spikes far above 2^18 of it: the
            # tail gathered when thin, narrowed by counts when thick.
            v = (1000 + rng.gamma(2, 60, n)).astype(np.int64)
            spikes = rng.random(n) < (0.001 if kind == "thin tail" else 0.2)
            v[spikes] = rng.integers(300_000, 10**12, int(spikes.sum()))
        else:
            v = np.full(n, 7, np.int64)
            v[[0, int(rng.integers(1, n))]] = [-(2**63), 2**63 - 1]
        sizes = rng.integers(0, 5000, 40).tolist()
        data = Uneven(v, [*sizes, n])
        ranks = sorted({0, n - 1, n // 2, int(n * 0.99), int(rng.integers(0, n))})
        ordered = np.sort(v)
        want = {k: int(ordered[k]) for k in ranks}
        assert rk.select(data, ranks) == want
        # A summary's (min, max) saves a pass; a wrong one is found out.
        lo, hi = int(ordered[0]), int(ordered[-1])
        for bounds in [(lo, hi), (-(2**63), 2**63 - 1), (lo + 1, hi), (lo, hi - 1), (hi, lo)]:
            assert rk.select(data, ranks, bounds) == want, bounds
        assert cw.argmax(data) == int(np.argmax(v))
        for size in (7, 4096):
            assert np.array_equal(np.concatenate([w.copy() for w in cw.windows(data, size)]), v)
        envelope, whole = cw.minmax_envelope(data, 240), downsample_minmax(v, 240)
        assert all(np.array_equal(a, b) for a, b in zip(envelope, whole, strict=True))
        block = max(1, n // 37)
        assert np.array_equal(cw.block_maxima(data, block), block_maxima(v, block))
        for size in (1, block, 4999):  # fed a chunk at a time (a tap)
            tap = cw.BlockMaxima(n, size)
            for c in data.chunks():
                tap.add(c)
            assert tap.done == tap.nb and np.array_equal(tap.maxima, block_maxima(v, size))


def test_a_latency_series_with_a_thin_tail_is_ranked_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its body within 2^18 of the minimum, a few spikes far above: every
    percentile exact after one pass over the chunks (the second pass over
    every chunk was the larger part of `analyze` of a long run)."""
    from rtbench.analysis import ranks as rk

    monkeypatch.setattr(rk, "GATHER", 1000)  # the series is not gathered whole
    rng = np.random.default_rng(5)
    v = (1000 + rng.gamma(2, 60, 200_000)).astype(np.int64)
    v[rng.integers(0, v.size, 50)] = rng.integers(300_000, 10**9, 50)
    passes: list[int] = []

    class Counted(Uneven):
        def chunks(self) -> Iterator[Int64Array]:
            passes.append(1)
            yield from super().chunks()

    data = Counted(v, [4096] * 60)
    ranks = [0, 100_000, 180_000, 198_000, 199_800, 199_980, 199_999]
    ordered = np.sort(v)
    assert rk.select(data, ranks, (int(v.min()), int(v.max()))) == {
        k: int(ordered[k]) for k in ranks
    }
    assert len(passes) == 1
