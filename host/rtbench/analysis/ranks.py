"""Exact ranks of a long series' raw samples read a chunk at a time (the
percentiles of show, analyze and report): counting passes narrow the value
range each rank lies in until it is one value or few enough samples to
gather and partition, in memory bounded by the counts and those samples.
"""

from __future__ import annotations

import numpy as np

from rtbench.analysis.chunkwise import value_range
from rtbench.model import ArraySamples, ChunkedSamples, Int64Array

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
    lo, hi = bounds
    if 1 << _BUCKET_BITS <= hi - lo < 1 << 62:
        first = _first_pass(data, lo, hi, pending)
        if first is None:
            return None
        out, pending = first
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


def _first_pass(
    data: ChunkedSamples, lo: int, hi: int, pending: dict[int, tuple[int, int, int, int]]
) -> tuple[dict[int, int], dict[int, tuple[int, int, int, int]]] | None:
    """The first pass over a range wider than one pass' buckets: each value
    of the range's lowest 2^18 counted exactly, the samples above gathered
    (while few) and counted in coarse buckets. A latency series' body lies
    near its minimum and its tail is thin: most ranks are exact after this
    one pass, where even buckets over the whole range took a second one.
    (found ranks, ranks still pending); None when the counts do not add up
    to the samples (the range was wrong)."""
    top = lo + (1 << _BUCKET_BITS) - 1  # the last value counted exactly
    shift = max(0, (hi - top - 1).bit_length() - _NARROW_BITS)
    dense = np.zeros(1 << _BUCKET_BITS, dtype=np.int64)
    coarse = np.zeros(((hi - top - 1) >> shift) + 1, dtype=np.int64)
    tail: list[Int64Array] | None = []
    kept = 0
    for c in data.chunks():
        if not c.size:
            continue
        c_lo, c_hi = int(c.min()), int(c.max())
        if c_lo < lo or c_hi > hi:
            c = c[(c >= lo) & (c <= hi)]  # left uncounted: the totals tell
        body, above = (c, None) if c_hi <= top else (c[c <= top], c[c > top])
        got = np.bincount(body - lo)
        dense[: got.size] += got
        if above is not None and above.size:
            got = np.bincount((above - (top + 1)) >> shift)
            coarse[: got.size] += got
            if tail is not None:
                tail.append(above)
                kept += above.size
                if kept > GATHER:
                    tail = None
    in_body, in_tail = int(dense.sum()), int(coarse.sum())
    if in_body + in_tail != len(data):
        return None
    body_cum = np.cumsum(dense)
    tail_values = np.sort(np.concatenate(tail)) if tail else None
    tail_cum = np.cumsum(coarse)
    found: dict[int, int] = {}
    still: dict[int, tuple[int, int, int, int]] = {}
    for k in pending:
        if k < in_body:
            found[k] = lo + int(np.searchsorted(body_cum, k, side="right"))
        elif tail_values is not None:
            found[k] = int(tail_values[k - in_body])
        else:  # narrowed to its coarse bucket, as a counting pass does
            b = int(np.searchsorted(tail_cum, k - in_body, side="right"))
            before = int(tail_cum[b - 1]) if b else 0
            b_lo = top + 1 + (b << shift)
            still[k] = (b_lo, min(hi, b_lo + (1 << shift) - 1), in_body + before, int(coarse[b]))
    return found, still


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
