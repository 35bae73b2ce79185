"""How model values become column values and back, the same on every backend:
samples as shuffled zlib blobs, JSON, and exact integers as decimal text."""

from __future__ import annotations

import json
import zlib
from typing import Any

import numpy as np

from rtbench.model import Histogram, Int64Array

# Byte k of every sample together, then zlib: latency samples differ mostly in
# their low bytes, so the high-byte planes are long runs of 0x00 (or 0xff).
SAMPLES_ENCODING = "i64le-shuffle-zlib"
# zlib level 1, not the default 6: measured on this machine (bench/README.md,
# "Store codec") it encodes 3x faster for 10 % more bytes on a quick run's
# samples; any level decodes alike, so stored runs stay readable both ways.
ZLIB_LEVEL = 1


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


def encode_samples(samples: Int64Array) -> tuple[int, bytes]:
    """(count, blob) of a 1-D int64 array in SAMPLES_ENCODING."""
    try:
        values = np.asarray(samples).astype("<i8", casting="safe", copy=False)
    except TypeError as e:
        raise StoreError(f"samples must be int64, not {np.asarray(samples).dtype}") from e
    if values.ndim != 1:
        raise StoreError(f"samples must be one-dimensional, not shape {values.shape}")
    # A plane at a time: a shuffled copy of all the samples at once would
    # double the memory a save of a long run takes.
    planes = np.ascontiguousarray(values).view(np.uint8).reshape(-1, 8)
    z = zlib.compressobj(ZLIB_LEVEL)
    parts = [z.compress(planes[:, k].tobytes()) for k in range(8)]
    parts.append(z.flush())
    return values.size, b"".join(parts)


def decode_samples(count: int, blob: bytes, encoding: str = SAMPLES_ENCODING) -> Int64Array:
    """Inverse of `encode_samples`: a fresh, writable, native int64 array."""
    if encoding != SAMPLES_ENCODING:
        raise StoreError(f"unknown samples encoding {encoding!r}")
    # One copy of the samples: each plane is decompressed on its own (an
    # eighth of the samples' bytes) straight into the result's bytes; the
    # whole blob decompressed, transposed and cast was three.
    out = np.empty(count, dtype="<i8")
    planes = out.view(np.uint8).reshape(count, 8)
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
