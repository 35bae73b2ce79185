"""Samples on their way from the stream to the store, kept on disk in the
store's own encoding (`codec.SAMPLES_ENCODING`), so that taking in a run
holds a bounded amount of memory whatever its length: a series' samples
arrive, are cut into the store's chunks and written to an unnamed
temporary file; the store copies the encoded chunks as they are
(`rows._insert_chunks`), and a consumer reads them a chunk at a time
(`SpilledSamples` is a `ChunkedSamples`).

Samples are written out only when the run's held samples pass a memory
budget (RTBENCH_INGEST_MIB, 96 MiB by default): a run that fits is never
encoded twice (here, then again for the store) and parses at the speed of
its decode (bench/README.md, figure 2); a longer one holds the budget at
most, whatever its length.

The file is deleted when it is closed (or the process dies): it is a
cache of what the journal already holds, never the only copy.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

import numpy as np

from rtbench.model import ChunkedSamples, Int64Array
from rtbench.store.codec import CHUNK_SAMPLES, StoreError, decode_into, encode_chunk

# Samples held in memory, over every series, before they are written out:
# 96 MiB of int64 by default. A 10-million-sample run stays in memory (its
# ingest peaks near 130 MiB), a longer one spills and holds this at most
# (issue 22: ingest within 256 MiB whatever the run's length).
PENDING_SAMPLES = 12 << 20
BUDGET_VARIABLE = "RTBENCH_INGEST_MIB"
# Once over the budget, the series' short ends (less than a chunk each)
# are written out too when they hold more than this (32 MiB): a run of
# many short series must not hold them all, nor a small budget make every
# part a chunk of its own.
SHORT_ENDS = 4 << 20


def budget_samples() -> int:
    """The budget in samples: RTBENCH_INGEST_MIB when set (0: every chunk
    written out as soon as it is whole), else PENDING_SAMPLES."""
    text = os.environ.get(BUDGET_VARIABLE, "").strip()
    if not text:
        return PENDING_SAMPLES
    try:
        mib = int(text)
    except ValueError:
        mib = -1
    if mib < 0:
        raise StoreError(f"{BUDGET_VARIABLE}={text!r}: expected a whole number of MiB (0 or more)")
    return mib << 17  # 8-byte samples in a MiB


def rechunk(parts: Sequence[Int64Array], size: int) -> Iterator[Int64Array]:
    """The samples of `parts`, in order, as arrays of `size` (the last one
    shorter): a view where one part holds a whole one, else a copy of its
    pieces, one array at a time."""
    pieces: list[Int64Array] = []
    held = 0
    for part in parts:
        at = 0
        while at < part.size:
            take = min(size - held, part.size - at)
            pieces.append(part[at : at + take])
            held += take
            at += take
            if held == size:
                yield pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
                pieces, held = [], 0
    if pieces:
        yield pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


class Spill:
    """The temporary file of one run's spilled chunks (appended, read back
    with pread), and the series writing to it."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._size = 0
        self.pending = 0  # samples held in memory over every series
        self.budget = budget_samples()
        self._series: list[SeriesSpill] = []

    def series(self) -> SeriesSpill:
        """A new series' writer."""
        out = SeriesSpill(self)
        self._series.append(out)
        return out

    def bound(self) -> None:
        """Writes out held samples once they are over the budget: every
        series' whole chunks, then their short ends if those are many."""
        if self.pending <= self.budget:
            return
        for s in self._series:
            s.write(whole_only=True)
        if self.pending > max(self.budget, SHORT_ENDS):
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


class HeldSamples(ChunkedSamples):
    """A series' samples that never went to the spill: the parts as they
    were decoded, read as the store's chunks without a copy of the whole
    (read-only once made)."""

    def __init__(self, parts: list[Int64Array]) -> None:
        self.parts = parts
        self.total = sum(p.size for p in parts)

    def __len__(self) -> int:
        return self.total

    def chunks(self) -> Iterator[Int64Array]:
        yield from rechunk(self.parts, CHUNK_SAMPLES)

    def __deepcopy__(self, memo: dict[int, Any]) -> HeldSamples:
        return self  # immutable


class SeriesSpill:
    """One series' samples as they are accepted, in order: held until the
    run's budget is passed, then written out in chunks of CHUNK_SAMPLES."""

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
        self._spill.bound()

    def flush(self) -> None:
        """Writes out what is held, a short chunk included."""
        self.write(whole_only=False)

    def write(self, whole_only: bool) -> None:
        """Writes out the held samples, one chunk at a time; with
        `whole_only` a short end stays held (as a copy: not a view that
        keeps a whole decoded batch alive)."""
        if not self._held:
            return
        parts, rest = self._parts, np.empty(0, dtype=np.int64)
        self._parts = []
        for part in rechunk(parts, CHUNK_SAMPLES):
            if whole_only and part.size < CHUNK_SAMPLES:
                rest = part.copy()
                break
            where, length = self._spill.write(encode_chunk(part))
            self._blobs.append((part.size, where, length))
        self._parts = [rest] if rest.size else []
        self._spill.pending -= self._held - rest.size
        self._held = int(rest.size)

    def result(self) -> Int64Array | ChunkedSamples:
        """The series' samples: an array when they are one store chunk at
        most (a short series, as before), the held parts when they never
        went out, else every chunk in the spill."""
        if self._blobs:
            self.flush()
            return SpilledSamples(self._spill, self._blobs)
        parts = self._parts
        self._spill.pending -= self._held
        self._parts, self._held = [], 0
        if sum(p.size for p in parts) > CHUNK_SAMPLES:
            return HeldSamples(parts)
        if not parts:
            return np.empty(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
