"""How model values become column values and back, the same on every backend:
samples as chunks of shuffled, zstd-compressed int64, JSON, and exact integers
as decimal text."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import zstandard

from rtbench.model import Histogram, Int64Array

# Byte k of every sample of a chunk together, then zstd level 1: latency
# samples differ mostly in their low bytes, so the high-byte planes are long
# runs of 0x00 (or 0xff). Measured on this machine on a 10M-sample CAL-TIMER
# run (bench/README.md, "Store codec"): zstd 1 compresses 4x faster than zlib
# 1 (0.05 vs 0.22 s), decompresses 2x faster (0.09 vs 0.17 s) and is half
# the size (0.075 vs 0.13 bytes a sample); lz4 was faster still to compress
# but no faster to decompress and 3x the size.
SAMPLES_ENCODING = "i64le-shuffle-zstd"
# What stores before schema 5 wrote (one blob a series, any zlib level): still read.
ZLIB_ENCODING = "i64le-shuffle-zlib"
ZSTD_LEVEL = 1
# Samples a stored chunk holds (1 MiB as int64): a save or a load holds one
# chunk's temporaries at a time, whatever the series' length.
CHUNK_SAMPLES = 1 << 17


class StoreError(Exception):
    """Anything the store cannot do, said so that a user can act on it."""


class AlreadyStored(StoreError):
    """The store holds a run of this identity already: nothing was stored."""

    def __init__(self, run_id: int, identity: str) -> None:
        super().__init__(f"run {identity} is already stored as run {run_id}")
        self.run_id = run_id
        self.identity = identity


class StoreBusy(StoreError):
    """The store cannot take the request now (another writer holds the lock,
    the database server is out of reach): trying again later may work."""


def as_int64(samples: Int64Array) -> Int64Array:
    """`samples` as a 1-D little-endian int64 array, without a copy when it is one."""
    try:
        values = np.asarray(samples).astype("<i8", casting="safe", copy=False)
    except TypeError as e:
        raise StoreError(f"samples must be int64, not {np.asarray(samples).dtype}") from e
    if values.ndim != 1:
        raise StoreError(f"samples must be one-dimensional, not shape {values.shape}")
    return values


def encode_chunk(values: Int64Array) -> bytes:
    """One chunk (any length; the store writes CHUNK_SAMPLES) in SAMPLES_ENCODING."""
    planes = np.ascontiguousarray(as_int64(values)).view(np.uint8).reshape(-1, 8)
    # The shuffled copy is this chunk's only temporary; filled a plane at a
    # time, which measured twice as fast as numpy's transposed copy.
    shuffled = np.empty((8, planes.shape[0]), dtype=np.uint8)
    # The bytes any sample sets, in one contiguous pass: a plane no sample
    # sets (most high bytes of a latency) is a memset, not a strided copy.
    used = int(np.bitwise_or.reduce(planes.view(np.uint64).ravel())) if planes.size else 0
    for k in range(8):
        if (used >> (8 * k)) & 0xFF:
            shuffled[k] = planes[:, k]
        else:
            shuffled[k] = 0
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(shuffled.data)


def encode_chunks(samples: Int64Array) -> Iterator[tuple[int, bytes]]:
    """(count, blob) of each CHUNK_SAMPLES of `samples`, in order, one at a time."""
    values = as_int64(samples)
    for start in range(0, values.size, CHUNK_SAMPLES):
        part = values[start : start + CHUNK_SAMPLES]
        yield part.size, encode_chunk(part)


def encode_samples(samples: Int64Array) -> tuple[int, bytes]:
    """(count, blob) of a whole 1-D int64 array as one chunk."""
    values = as_int64(samples)
    return values.size, encode_chunk(values)


def decode_into(out: Int64Array, blob: bytes, encoding: str = SAMPLES_ENCODING) -> None:
    """Decodes one chunk of len(out) samples straight into `out` (int64, C order)."""
    count = out.size
    planes = out.view(np.uint8).reshape(count, 8)
    if encoding == SAMPLES_ENCODING:
        try:
            # The frame says its size: a damaged one must not make us allocate it.
            if zstandard.frame_content_size(blob) != 8 * count:
                raise StoreError(f"damaged samples blob: its size is not {count} samples")
            raw = zstandard.ZstdDecompressor().decompress(blob)
        except zstandard.ZstdError as e:
            raise StoreError(f"damaged samples blob: {e}") from e
        if len(raw) != 8 * count:
            raise StoreError(f"damaged samples blob: {len(raw)} bytes for {count} samples")
        shuffled = np.frombuffer(raw, dtype=np.uint8).reshape(8, count)
        # Latencies leave most high-byte planes all zero: one memset, then
        # only the planes that hold something are copied (a strided byte
        # copy costs ten times the test for a nonzero byte).
        out.fill(0)
        for k in range(8):  # a plane at a time: 1.6x faster than one transposed copy
            if shuffled[k].any():
                planes[:, k] = shuffled[k]
    elif encoding == ZLIB_ENCODING:
        _zlib_into(planes, count, blob)
    else:
        raise StoreError(f"unknown samples encoding {encoding!r}")


def _zlib_into(planes: Any, count: int, blob: bytes) -> None:
    # A plane at a time (an eighth of the samples' bytes) straight into the
    # result: a store before schema 5 kept a series as one such blob.
    d = zlib.decompressobj()
    got, data = 0, blob
    try:
        for k in range(8 if count else 0):
            plane = d.decompress(data, count)  # at most one plane
            data = d.unconsumed_tail
            got += len(plane)
            if len(plane) < count:
                break
            planes[:, k] = np.frombuffer(plane, dtype=np.uint8)
        rest = d.decompress(data) + d.flush()
    except zlib.error as e:
        raise StoreError(f"damaged samples blob: {e}") from e
    got += len(rest)
    if got != 8 * count or not d.eof:
        raise StoreError(f"damaged samples blob: {got} bytes for {count} samples")


def decode_samples(count: int, blob: bytes, encoding: str = SAMPLES_ENCODING) -> Int64Array:
    """Inverse of `encode_samples`: a fresh, writable, native int64 array."""
    out = np.empty(count, dtype="<i8")
    decode_into(out, blob, encoding)
    return out.astype(np.int64, copy=False)  # a no-op on a little-endian host


def to_json(value: Any, what: str) -> str:
    # ensure_ascii: a lone surrogate (from a JSON "\ud800" escape) survives
    # as an escape instead of failing the UTF-8 encoding of the column.
    try:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise StoreError(f"{what} cannot be stored as JSON: {e}") from e


def from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def dec(value: int | None, what: str) -> str | None:
    """An exact integer as the store keeps it: decimal text, of any size (the
    wire format's uint64 fits neither SQLite's INTEGER nor BIGINT)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise StoreError(f"{what} = {value!r:.40} is not an integer")
    return str(int(value))


def to_int(text: str | int | None) -> int:
    """Inverse of `dec` (NULL is 0: only ever read where NOT NULL holds)."""
    return 0 if text is None else opt_int(text) or 0


def opt_int(text: str | int | None) -> int | None:
    if text is None or isinstance(text, int):
        return text
    try:
        return int(text)
    except ValueError:
        raise StoreError(f"damaged store: {text!r:.40} where an integer belongs") from None


def hist_from_dict(d: dict[str, Any] | None) -> Histogram | None:
    if d is None:
        return None
    return Histogram(
        layout=d["layout"],
        counts=[(int(i), int(c)) for i, c in d["counts"]],
        n=d["n"],
        min=d["min"],
        max=d["max"],
        sum=d["sum"],
        underflow=d["underflow"],
        overflow=d["overflow"],
    )
