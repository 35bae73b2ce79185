"""ChunkedSamples: a series' samples a chunk at a time, the same values
whether they are an in-memory array or chunks read one by one."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from rtbench.model import ArraySamples, ChunkedSamples, Int64Array, Series


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
