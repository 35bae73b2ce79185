"""Samples on their way from the stream to the store, kept on disk in the
store's own encoding (`codec.SAMPLES_ENCODING`), so that taking in a run
holds a bounded amount of memory whatever its length: a series' samples
arrive, are cut into the store's chunks and written to an unnamed
temporary file; the store copies the encoded chunks as they are
(`rows._insert_chunks`), and a consumer reads them a chunk at a time
(`SpilledSamples` is a `ChunkedSamples`).

The file is deleted when it is closed (or the process dies): it is a
cache of what the journal already holds, never the only copy.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from rtbench.model import ChunkedSamples, Int64Array
from rtbench.store.codec import CHUNK_SAMPLES, decode_into, encode_chunk

# Samples waiting in memory, over every series, before they are written
# out even as short chunks: 32 MiB of int64 (a run of many short series
# must not hold them all either).
PENDING_SAMPLES = 4 << 20


class Spill:
    """The temporary file of one run's spilled chunks (appended, read back
    with pread), and the series writing to it."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._size = 0
        self.pending = 0  # samples held in memory over every series
        self._series: list[SeriesSpill] = []

    def series(self) -> SeriesSpill:
        """A new series' writer."""
        out = SeriesSpill(self)
        self._series.append(out)
        return out

    def bound(self) -> None:
        """Writes out every series' held samples once they are too many."""
        if self.pending > PENDING_SAMPLES:
            for s in self._series:
                s.flush()

    def write(self, blob: bytes) -> tuple[int, int]:
        """Appends `blob`; returns (where, length) to read it back."""
        if self._file is None:
            # Open as long as the run's samples are read from it.
            self._file = tempfile.TemporaryFile(prefix="rtbench-samples-")  # noqa: SIM115
        where = self._size
        self._file.write(blob)
        self._size += len(blob)
        return where, len(blob)

    def read(self, where: int, length: int) -> bytes:
        assert self._file is not None
        self._file.flush()
        data = os.pread(self._file.fileno(), length, where)
        if len(data) != length:
            raise OSError(f"the samples spill file is {len(data)} bytes short at {where}")
        return data


class SpilledSamples(ChunkedSamples):
    """A series' samples as encoded chunks in a `Spill` (read-only once
    made: a copy of it shares the file)."""

    def __init__(self, spill: Spill, blobs: list[tuple[int, int, int]]) -> None:
        self.spill = spill
        self.blobs = blobs  # (count, where, length) of each chunk, in order
        self.total = sum(count for count, _, _ in blobs)

    def __len__(self) -> int:
        return self.total

    def encoded(self) -> Iterator[tuple[int, bytes]]:
        """(count, blob) of each chunk in `codec.SAMPLES_ENCODING`."""
        for count, where, length in self.blobs:
            yield count, self.spill.read(where, length)

    def chunks(self) -> Iterator[Int64Array]:
        for count, blob in self.encoded():
            out = np.empty(count, dtype=np.int64)
            decode_into(out, blob)
            yield out

    def __deepcopy__(self, memo: dict[int, Any]) -> SpilledSamples:
        return self  # immutable


class SeriesSpill:
    """One series' samples as they are accepted, in order: whole chunks of
    CHUNK_SAMPLES go to the spill as soon as they are complete."""

    def __init__(self, spill: Spill) -> None:
        self._spill = spill
        self._parts: list[Int64Array] = []
        self._held = 0  # samples in _parts
        self._blobs: list[tuple[int, int, int]] = []

    def append(self, values: Int64Array) -> None:
        if not values.size:
            return
        self._parts.append(values)
        self._held += values.size
        self._spill.pending += values.size
        if self._held >= CHUNK_SAMPLES:
            self._write(whole_only=True)
        self._spill.bound()

    def flush(self) -> None:
        """Writes out what is held, a short chunk included."""
        self._write(whole_only=False)

    def _write(self, whole_only: bool) -> None:
        if not self._held:
            return
        values = self._held_array()
        end = values.size - values.size % CHUNK_SAMPLES if whole_only else values.size
        for start in range(0, end, CHUNK_SAMPLES):
            part = values[start : min(start + CHUNK_SAMPLES, end)]
            where, length = self._spill.write(encode_chunk(part))
            self._blobs.append((part.size, where, length))
        rest = values[end:]
        self._parts = [rest.copy()] if rest.size else []  # not a view of the large array
        self._spill.pending -= self._held - rest.size
        self._held = int(rest.size)

    def _held_array(self) -> Int64Array:
        if not self._parts:
            return np.empty(0, dtype=np.int64)
        return self._parts[0] if len(self._parts) == 1 else np.concatenate(self._parts)

    def result(self) -> Int64Array | SpilledSamples:
        """The series' samples: an array when none were written out (a short
        series, as before), else every chunk in the spill."""
        if self._blobs:
            self.flush()
            return SpilledSamples(self._spill, self._blobs)
        values = self._held_array()
        self._spill.pending -= self._held
        self._parts, self._held = [], 0
        return values
