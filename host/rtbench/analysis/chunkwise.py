"""Exact figures of a series' raw samples read a chunk at a time
(`ChunkedSamples`): what show, analyze and report compute over a long stored
run without holding its samples whole. Each function gives exactly what its
whole-array counterpart gives (the same values, in the same floating-point
order where that matters), in memory bounded by a chunk or a window.
Exact ranks (percentiles) are `rtbench.analysis.ranks`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from rtbench.model import ArraySamples, ChunkedSamples, Int64Array

FloatArray = npt.NDArray[np.float64]


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


class BlockMaxima:
    """The maximum of each whole block of `block` consecutive samples of a
    series of `n`, fed a chunk at a time (a tap on another figure's pass)."""

    def __init__(self, n: int, block: int) -> None:
        self.block, self.nb = block, n // block
        self.maxima = np.empty(self.nb, dtype=np.float64)
        self.done = 0  # whole blocks
        self._open: tuple[int, int] | None = None  # (samples, max) of a block begun

    def add(self, c: Int64Array) -> None:
        i = 0
        if self._open is not None and c.size:
            have, best = self._open
            take = min(self.block - have, c.size)
            best = max(best, int(c[:take].max()))
            i = take
            if have + take == self.block:
                self.maxima[self.done] = best
                self.done += 1
                self._open = None
            else:
                self._open = (have + take, best)
        whole = min((c.size - i) // self.block, self.nb - self.done)
        if whole > 0:
            end = i + whole * self.block
            self.maxima[self.done : self.done + whole] = (
                c[i:end].reshape(whole, self.block).max(axis=1)
            )
            self.done += whole
            i = end
        if i < c.size and self.done < self.nb:
            self._open = (c.size - i, int(c[i:].max()))


# Block maxima taken on another pass (`remember_block_maxima`), by series.
_MAXIMA: weakref.WeakKeyDictionary[ChunkedSamples, dict[int, FloatArray]] = (
    weakref.WeakKeyDictionary()
)


def remember_block_maxima(data: ChunkedSamples, taken: BlockMaxima) -> None:
    """Keeps the block maxima a tap took over all of `data`, for
    `block_maxima`: one decode of a long stored series fewer."""
    if taken.done == taken.nb:
        _MAXIMA.setdefault(data, {})[taken.block] = taken.maxima


def block_maxima(data: ChunkedSamples, block: int) -> FloatArray:
    """The maximum of each whole block of `block` consecutive samples."""
    known = _MAXIMA.get(data, {}).get(block)
    if known is not None:
        return known.copy()
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
