"""Exact figures of a series' raw samples read a chunk at a time
(`ChunkedSamples`): what show, analyze and report compute over a long stored
run without holding its samples whole. Each function gives exactly what its
whole-array counterpart gives (the same values, in the same floating-point
order where that matters), in memory bounded by a chunk, a window or the
samples of one narrow value range.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from rtbench.model import ArraySamples, ChunkedSamples, Int64Array

FloatArray = npt.NDArray[np.float64]

# A value range holding at most this many samples is gathered and
# partitioned (2 MiB, so that the peak hardly depends on the data); a wider
# one is counted into buckets first.
GATHER = 1 << 18
# Buckets of one counting pass (2 MiB of counts): each pass narrows a range
# 262,144-fold, so an int64 range takes at most four, and a latency series
# spanning up to 262 µs in ns (CAL-TIMER's) is counted exactly in one pass,
# where 2^16 buckets took a second pass over every chunk.
_BUCKET_BITS = 18
# A pass counting several narrowed ranges at once (one a pending rank) uses
# 2^16 buckets for each, so that their counts stay small together.
_NARROW_BITS = 16


class Concatenated(ChunkedSamples):
    """Several series' samples one after the other (repetitions pooled),
    without a copy: the chunks of each in turn."""

    def __init__(self, parts: list[ChunkedSamples]) -> None:
        self.parts = parts

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def chunks(self) -> Iterator[Int64Array]:
        for part in self.parts:
            yield from part.chunks()


def windows(data: ChunkedSamples, size: int) -> Iterator[Int64Array]:
    """The samples in consecutive windows of exactly `size` (the last one
    shorter): the slices a whole-array loop in steps of `size` would see, so
    that sums over them round as they did. Views of an in-memory array;
    otherwise one buffer, refilled for the next window (copy to keep one)."""
    if isinstance(data, ArraySamples):
        for start in range(0, data.values.size, size):
            yield data.values[start : start + size]
        return
    buf = np.empty(size, dtype=np.int64)
    fill = 0
    for chunk in data.chunks():
        at = 0
        while at < chunk.size:
            take = min(size - fill, chunk.size - at)
            buf[fill : fill + take] = chunk[at : at + take]
            fill += take
            at += take
            if fill == size:
                yield buf
                fill = 0
    if fill:
        yield buf[:fill]


class SquaredDeviations:
    """The sum of (x - mu)^2 over samples fed a chunk at a time, as a
    whole-array loop sums it: each window of `size` converted and
    subtracted as `w.astype(float64) - mu` does it, then `np.dot(d, d)`,
    the windows' sums added in order. The values are written straight from
    the chunks into one float buffer, refilled for the next window: no int64
    copy of a window beside it."""

    def __init__(self, size: int, mu: float, n: int) -> None:
        self.size, self.mu = size, mu
        self.buf = np.empty(min(size, max(n, 1)), dtype=np.float64)
        self.fill = 0
        self.seen = 0  # samples fed
        self.ss = 0.0

    def add(self, chunk: Int64Array) -> None:
        at = 0
        while at < chunk.size:
            take = min(self.size - self.fill, chunk.size - at)
            np.subtract(chunk[at : at + take], self.mu, out=self.buf[self.fill : self.fill + take])
            self.fill += take
            at += take
            if self.fill == self.size:
                self.ss += float(np.dot(self.buf, self.buf))
                self.fill = 0
        self.seen += chunk.size

    def total(self) -> float:
        if self.fill:
            d = self.buf[: self.fill]
            self.ss += float(np.dot(d, d))
            self.fill = 0
        return self.ss


class Tapped(ChunkedSamples):
    """`data`, whose first complete pass also feeds each chunk to `tap`:
    two figures from one decode of every chunk (a stored series' chunks are
    decompressed on each pass)."""

    def __init__(self, data: ChunkedSamples, tap: Callable[[Int64Array], None]) -> None:
        self.data, self.tap = data, tap
        self.tapped = False  # a whole pass was fed

    def __len__(self) -> int:
        return len(self.data)

    def chunks(self) -> Iterator[Int64Array]:
        if self.tapped:
            yield from self.data.chunks()
            return
        for c in self.data.chunks():
            self.tap(c)
            yield c
        self.tapped = True


def value_range(data: ChunkedSamples) -> tuple[int, int] | None:
    """(min, max) of the samples; None when there are none."""
    lo: int | None = None
    hi: int | None = None
    for c in data.chunks():
        if c.size:
            cl, ch = int(c.min()), int(c.max())
            lo = cl if lo is None else min(lo, cl)
            hi = ch if hi is None else max(hi, ch)
    return None if lo is None or hi is None else (lo, hi)


def argmax(data: ChunkedSamples) -> int | None:
    """Index of the first largest sample (numpy's argmax); None when empty."""
    if isinstance(data, ArraySamples):
        return int(np.argmax(data.values)) if data.values.size else None
    best: int | None = None
    where: int | None = None
    at = 0
    for c in data.chunks():
        if c.size:
            i = int(np.argmax(c))
            v = int(c[i])
            if best is None or v > best:  # strictly: the first of equals wins
                best, where = v, at + i
        at += c.size
    return where


def select(
    data: ChunkedSamples, ranks: list[int], bounds: tuple[int, int] | None = None
) -> dict[int, int]:
    """{k: the k-th smallest sample (0-based)} for each k in `ranks`, exactly.

    A value range and the number of samples below it locate each rank;
    counting passes narrow a range (2^18 buckets a pass) until it is a
    single value or holds few enough samples to gather and partition.
    `bounds`: the samples' (min, max) when known (a series' summary), which
    saves a pass; checked by the counts, and found by a pass when wrong."""
    n = len(data)
    if not ranks:
        return {}
    if any(not 0 <= k < n for k in ranks):
        raise ValueError(f"ranks {ranks} outside 0..{n - 1}")
    if isinstance(data, ArraySamples):  # in memory: one partial sort of a copy
        part = np.partition(data.values, sorted(set(ranks)))
        return {k: int(part[k]) for k in ranks}
    if bounds is not None and bounds[0] <= bounds[1]:
        found = _select(data, ranks, bounds)
        if found is not None:
            return found
    whole = value_range(data)
    assert whole is not None
    found = _select(data, ranks, whole)
    if found is None:
        raise ValueError("the samples changed between two passes over them")
    return found


def _select(
    data: ChunkedSamples, ranks: list[int], bounds: tuple[int, int]
) -> dict[int, int] | None:
    """`select` from a range said to hold every sample; None when a pass
    finds another count in a range than the one before said."""
    # rank -> (lo, hi, samples below lo, samples in [lo, hi])
    pending = {k: (bounds[0], bounds[1], 0, len(data)) for k in set(ranks)}
    out: dict[int, int] = {}
    while pending:
        for k, (lo, hi, _, _) in list(pending.items()):
            if lo == hi:
                out[k] = lo
                del pending[k]
        if not pending:
            break
        ranges = {(lo, hi, below, count) for lo, hi, below, count in pending.values()}
        gather = [r for r in ranges if r[3] <= GATHER]
        count = [r for r in ranges if r[3] > GATHER]
        gathered, counted = _pass(data, [(r[0], r[1]) for r in gather], [r[:2] for r in count])
        for k, (lo, hi, below, num) in list(pending.items()):
            if (lo, hi) in gathered:
                values = gathered[lo, hi]
                if values.size != num:
                    return None
                out[k] = int(np.partition(values, k - below)[k - below])
                del pending[k]
            else:
                shift, counts = counted[lo, hi]
                cum = np.cumsum(counts)
                if not cum.size or int(cum[-1]) != num:
                    return None
                b = int(np.searchsorted(cum, k - below, side="right"))
                before = int(cum[b - 1]) if b else 0
                new_lo = lo + (b << shift)
                new_hi = min(hi, new_lo + (1 << shift) - 1)
                pending[k] = (new_lo, new_hi, below + before, int(counts[b]))
    return {k: out[k] for k in ranks}


def _pass(
    data: ChunkedSamples, gather: list[tuple[int, int]], count: list[tuple[int, int]]
) -> tuple[dict[tuple[int, int], Int64Array], dict[tuple[int, int], tuple[int, Int64Array]]]:
    """One pass over the samples: the values in each `gather` range, and the
    bucket counts (shift, counts) of each `count` range."""
    parts: dict[tuple[int, int], list[Int64Array]] = {r: [] for r in gather}
    bits = _BUCKET_BITS if len(count) == 1 else _NARROW_BITS
    shifts = {r: max(0, (r[1] - r[0]).bit_length() - bits) for r in count}
    counts = {r: np.zeros(((r[1] - r[0]) >> shifts[r]) + 1, dtype=np.int64) for r in count}
    for c in data.chunks():
        if not c.size:
            continue
        c_lo, c_hi = int(c.min()), int(c.max())
        for lo, hi in gather:
            parts[lo, hi].append(c[(c >= lo) & (c <= hi)])
        for lo, hi in count:
            # Masked only when the chunk reaches outside the range (the
            # first pass' range holds every sample).
            inside = c if lo <= c_lo and c_hi <= hi else c[(c >= lo) & (c <= hi)]
            if hi - lo < 1 << 63:  # offsets from lo fit int64: a new array, shifted in place
                buckets = inside - lo
                if shifts[lo, hi]:
                    buckets >>= shifts[lo, hi]
            else:  # offsets as uint64: exact across the whole int64 range
                offsets = inside.view(np.uint64) - np.uint64(lo % (1 << 64))
                buckets = (offsets >> np.uint64(shifts[lo, hi])).astype(np.int64)
            # Only up to the chunk's highest bucket: most chunks of a
            # latency series stay far below the range's top (its outliers).
            got = np.bincount(buckets)
            counts[lo, hi][: got.size] += got
    gathered = {r: np.concatenate(p) if p else np.empty(0, np.int64) for r, p in parts.items()}
    return gathered, {r: (shifts[r], counts[r]) for r in count}


def block_maxima(data: ChunkedSamples, block: int) -> FloatArray:
    """The maximum of each whole block of `block` consecutive samples."""
    nb = len(data) // block
    out = np.empty(nb, dtype=np.float64)
    per = max(1, (1 << 22) // block)  # whole blocks a window
    done = 0
    for w in windows(data, per * block):
        whole = min(len(w) // block, nb - done)
        if whole <= 0:
            break
        out[done : done + whole] = w[: whole * block].reshape(whole, block).max(axis=1)
        done += whole
    return out


def minmax_envelope(data: ChunkedSamples, points: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(first index, min, max) of each of `points` buckets of consecutive
    samples (n > points), as `np.minimum/maximum.reduceat` at the same
    edges give them."""
    n = len(data)
    edges = np.linspace(0, n, points + 1).astype(np.int64)
    starts = edges[:-1]
    mins = np.full(points, np.iinfo(np.int64).max, dtype=np.int64)
    maxs = np.full(points, np.iinfo(np.int64).min, dtype=np.int64)
    at = 0
    for c in data.chunks():
        if not c.size:
            continue
        first = int(np.searchsorted(starts, at, side="right")) - 1
        cuts = starts[(starts > at) & (starts < at + c.size)] - at
        seg = np.concatenate(([0], cuts)).astype(np.intp)
        span = slice(first, first + seg.size)
        mins[span] = np.minimum(mins[span], np.minimum.reduceat(c, seg))
        maxs[span] = np.maximum(maxs[span], np.maximum.reduceat(c, seg))
        at += c.size
    return starts.astype(np.float64), mins.astype(np.float64), maxs.astype(np.float64)
