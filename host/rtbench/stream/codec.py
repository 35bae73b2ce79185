"""Record checksums and the `zzd-varint-b64` sample encoding.

The decoder is vectorised: ten million samples are some twenty million
varint bytes, so every step below is a numpy pass over a buffer, never a
Python loop per byte or per sample. It finds the varints' last bytes (high bit
clear), each byte's position within its varint, shifts each byte's low seven
bits by 7 * position, and sums each varint's parts (as differences of one
running sum, which is several times faster than `np.add.reduceat` over
millions of short segments). Many chunks decode in one call
(`decode_chunks`), each restarting its delta chain, so the assembler pays
numpy's per-call overhead per megabyte rather than per chunk.

All arithmetic is on uint64 and wraps modulo 2**64: a delta between int64
extremes (INT64_MIN -> INT64_MAX) overflows int64, but the wrapped sum is
exactly the next value once viewed as int64 again.
"""

from __future__ import annotations

import binascii
import zlib
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from rtbench.model import Int64Array

ENCODING = "zzd-varint-b64"

_MASK64 = (1 << 64) - 1
_MAX_VARINT_BYTES = 10  # ceil(64 / 7)
_BLOCK_CHARS = 1 << 20  # base64 characters decoded per numpy pass
_SMALL_CHARS = 512  # up to this much text, Python beats numpy's per-call cost
_U1 = np.uint64(1)
_LOW7 = np.uint8(0x7F)
_HIGH = np.uint8(0x80)

UInt8Array = npt.NDArray[np.uint8]
UInt64Array = npt.NDArray[np.uint64]
IntArray = npt.NDArray[np.intp]


class CodecError(ValueError):
    """A samples chunk that does not decode; `chunk` is its index in the call."""

    def __init__(self, reason: str, chunk: int = 0) -> None:
        super().__init__(f"chunk {chunk}: {reason}")
        self.reason = reason
        self.chunk = chunk


class _Overlong(Exception):
    def __init__(self, byte: int) -> None:
        super().__init__(byte)
        self.byte = byte


def crc32(data: bytes) -> int:
    """CRC-32 (IEEE 802.3) as the record lines carry it."""
    return zlib.crc32(data) & 0xFFFFFFFF


# --- encoding (pure Python: the reference the vectorised decoder is tested against)


def _to_int64(v: int) -> int:
    v &= _MASK64
    return v - (1 << 64) if v >> 63 else v


def encode_varints(values: Iterable[int]) -> bytes:
    """Unsigned LEB128 of each value (taken modulo 2**64)."""
    out = bytearray()
    for v in values:
        v &= _MASK64
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def zigzag_deltas(values: Iterable[int]) -> list[int]:
    """The zig-zag mapped deltas of int64 `values`, wrapping like the agent's C."""
    out: list[int] = []
    prev = 0
    for v in values:
        d = _to_int64(v - prev)
        out.append(((d << 1) ^ (d >> 63)) & _MASK64)
        prev = v
    return out


def encode_zzd(values: Iterable[int]) -> str:
    """Encode one chunk of int64 values as `zzd-varint-b64` text."""
    raw = encode_varints(zigzag_deltas(int(v) for v in values))
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


# --- decoding


def _b64(data: str | bytes, chunk: int) -> bytes:
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise CodecError(f"bad base64 ({e})", chunk) from e


def _blocks(chunks: Sequence[tuple[str | bytes, int]]) -> Iterator[tuple[int, int]]:
    """[first, last) index ranges of chunks holding about _BLOCK_CHARS of text."""
    first, size = 0, 0
    for i, (data, _) in enumerate(chunks):
        size += len(data)
        if size >= _BLOCK_CHARS:
            yield first, i + 1
            first, size = i + 1, 0
    if first < len(chunks):
        yield first, len(chunks)


def _check_chunks(
    buf: UInt8Array, ends: IntArray, bounds: IntArray, counts: IntArray, first: int
) -> None:
    """Raise CodecError for the first chunk whose varints do not add up."""
    per_chunk = np.diff(np.searchsorted(ends, bounds), prepend=0)
    # A chunk that does not end on a varint's last byte would lend its tail
    # to the next chunk's first varint, so it must be caught before the
    # chunks are decoded as one buffer.
    sizes = np.diff(bounds, prepend=0)
    dangling = np.zeros(len(bounds), dtype=bool)
    dangling[sizes > 0] = buf[bounds[sizes > 0] - 1] >= _HIGH
    bad = np.flatnonzero(dangling | (per_chunk != counts))
    if len(bad):
        i = int(bad[0])
        if dangling[i]:
            raise CodecError("the last varint runs off the end of the data", first + i)
        raise CodecError(f"holds {per_chunk[i]} values, the record says {counts[i]}", first + i)


def _positions(buf: UInt8Array) -> UInt8Array:
    """Each byte's index within its varint.

    Raises _Overlong at a byte that makes its varint longer than 64 bits.
    """
    cont = buf >= _HIGH
    pos = np.zeros(len(buf), dtype=np.uint8)
    # run[j] is true when the k bytes before byte j + k all continue a varint,
    # i.e. byte j + k is at position k or more. Varints are short (two bytes
    # for typical latencies), so this stops after a pass or two.
    run = cont[:-1]
    k = 1
    while run.any():
        if k == _MAX_VARINT_BYTES:
            raise _Overlong(k + int(np.argmax(run)))
        pos[k:] += run
        k += 1
        run = run[1:] & cont[: len(buf) - k]
    if k == _MAX_VARINT_BYTES:
        # The tenth byte of a varint may only hold bit 63.
        tenth = np.flatnonzero((pos == _MAX_VARINT_BYTES - 1) & (buf > 1))
        if len(tenth):
            raise _Overlong(int(tenth[0]))
    return pos


def _varint_values(buf: UInt8Array, ends: IntArray) -> UInt64Array:
    """Decode every LEB128 varint in `buf`, whose last bytes are at `ends`."""
    # In place where it can be: each temporary is 8 bytes a data byte.
    parts = (buf & _LOW7).astype(np.uint64)
    np.left_shift(parts, _positions(buf) * np.uint8(7), out=parts)
    # The parts of one varint occupy disjoint bits, so their sum is the
    # varint's value; differences of one running sum give every varint's sum.
    at_ends = np.cumsum(parts, out=parts)[ends]
    values = np.empty_like(at_ends)
    values[0] = at_ends[0]
    np.subtract(at_ends[1:], at_ends[:-1], out=values[1:])
    return values


def _unzigzag(z: UInt64Array) -> UInt64Array:
    """(z >> 1) ^ -(z & 1), in place in `z` (one temporary, not three)."""
    sign = z & _U1
    np.negative(sign, out=sign)  # 0 or all ones: uint64 wraps
    np.right_shift(z, _U1, out=z)
    np.bitwise_xor(z, sign, out=z)
    return z


def _decode_block(chunks: Sequence[tuple[str | bytes, int]], first: int) -> UInt64Array:
    """Decode consecutive chunks (the first is chunk `first` of the call)."""
    raws = [_b64(data, first + i) for i, (data, _) in enumerate(chunks)]
    counts = np.fromiter((count for _, count in chunks), dtype=np.int64, count=len(chunks))
    buf = np.frombuffer(b"".join(raws), dtype=np.uint8)
    bounds = np.cumsum(np.fromiter(map(len, raws), dtype=np.int64, count=len(raws)))
    ends = np.flatnonzero(buf < _HIGH)
    _check_chunks(buf, ends, bounds, counts, first)
    if len(ends) == 0:
        return np.empty(0, dtype=np.uint64)
    try:
        deltas = _unzigzag(_varint_values(buf, ends))
    except _Overlong as e:
        chunk = first + int(np.searchsorted(bounds, e.byte, side="right"))
        raise CodecError("a varint is longer than 64 bits", chunk) from None
    # Restart the running sum at every chunk: subtract the previous chunk's
    # total from its first delta, so one cumsum decodes all chunks.
    firsts = (np.cumsum(counts) - counts)[counts > 0]
    totals = np.add.reduceat(deltas, firsts)
    deltas[firsts[1:]] -= totals[:-1]
    return np.cumsum(deltas, out=deltas)


def decode_chunks(chunks: Sequence[tuple[str | bytes, int]]) -> Int64Array:
    """Decode `(data, count)` chunks and return all their values, concatenated.

    Each chunk's delta chain starts afresh. Raises CodecError (with `.chunk`
    set to the offending chunk's index) for bad base64, a count that does not
    match, a varint running off the end of its chunk, or one over 64 bits.
    """
    for i, (data, count) in enumerate(chunks):
        # Every value takes at least one byte, i.e. more than one base64
        # character: a larger count is a damaged record, not a reason to
        # allocate its claim.
        if not 0 <= count <= len(data):
            raise CodecError(f"a count of {count} does not fit {len(data)} characters", i)
    if sum(len(data) for data, _ in chunks) <= _SMALL_CHARS:
        small = _decode_small(chunks)
        if small is not None:
            return small
    out = np.empty(sum(count for _, count in chunks), dtype=np.uint64)
    # Blocks of chunks bound the per-byte temporaries (several times the
    # data's size) while still paying numpy's per-call cost rarely.
    done = 0
    for first, last in _blocks(chunks):
        values = _decode_block(chunks[first:last], first)
        out[done : done + len(values)] = values
        done += len(values)
    return out.view(np.int64)


def _decode_small(chunks: Sequence[tuple[str | bytes, int]]) -> Int64Array | None:
    """A few values in plain Python: numpy's cost per call (tens of µs for
    the dozen passes above) dwarfs decoding a short series byte by byte.
    None on any irregularity: the vectorised path then says what is wrong,
    so both paths report damage alike."""
    values: list[int] = []
    for data, count in chunks:
        try:
            raw = binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            return None
        start, prev, v, shift = len(values), 0, 0, 0
        for b in raw:
            if shift == 63 and b > 1:
                return None  # over 64 bits
            v |= (b & 0x7F) << shift
            if b & 0x80:
                shift += 7
                continue
            prev = (prev + ((v >> 1) ^ -(v & 1))) & _MASK64
            values.append(prev)
            v = shift = 0
        if shift or len(values) - start != count:
            return None
    return np.array(values, dtype=np.uint64).view(np.int64)


def decode_zzd(data: str | bytes, count: int) -> Int64Array:
    """Decode one `zzd-varint-b64` chunk of `count` values."""
    return decode_chunks([(data, count)])
