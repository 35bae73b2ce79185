"""Record checksums and the `zzd-varint-b64` sample encoding.

The decoder is vectorised: ten million samples are some ten million varint
bytes, so every step below is a numpy pass over a buffer, never a Python
loop per byte or per sample. Almost every delta between successive samples
is a one-byte varint, so the bytes that end a varint (high bit clear) are
zig-zag decoded in 8-bit arithmetic and widened once; the few longer
varints are found from the continuation bytes (high bit set), decoded
apart and put in their places. Many chunks decode in one call
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
import pybase64

from rtbench.model import Int64Array

ENCODING = "zzd-varint-b64"

_MASK64 = (1 << 64) - 1
_MAX_VARINT_BYTES = 10  # ceil(64 / 7)
_BLOCK_CHARS = 1 << 20  # base64 characters decoded per numpy pass
_SMALL_CHARS = 512  # up to this much text, Python beats numpy's per-call cost
_SPAN_BYTES = 1000  # bytes a slice copy must carry to beat a mask pass over them
_U1 = np.uint64(1)
_LOW7 = np.uint8(0x7F)
_HIGH = np.uint8(0x80)
_U8_1 = np.uint8(1)

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


try:
    # ISA-L's CRC-32 (carry-less multiply) is several times zlib's: the
    # largest per-record cost left in the parser. Its wheels cover the
    # common hosts (pyproject.toml); elsewhere zlib's gives the same value.
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - hosts without an isal wheel
    _crc32 = zlib.crc32


def crc32(data: bytes | memoryview) -> int:
    """CRC-32 (IEEE 802.3) as the record lines carry it."""
    return _crc32(data) & 0xFFFFFFFF


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
    # pybase64 (SIMD) is several times binascii's speed. What it accepts,
    # binascii's strict mode accepts with the same bytes; it refuses a few
    # things binascii takes (padding after a whole group), so a refusal is
    # judged, and worded, by binascii (tests/host/test_codec.py).
    try:
        return pybase64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        pass
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
    buf: UInt8Array, cont: IntArray, bounds: IntArray, counts: IntArray, first: int
) -> None:
    """Raise CodecError for the first chunk whose varints do not add up.

    `cont` holds the indices of continuation bytes (high bit set): a chunk
    holds as many varints as it has bytes that are not one."""
    sizes = np.diff(bounds, prepend=0)
    per_chunk = sizes - np.diff(np.searchsorted(cont, bounds), prepend=0)
    # A chunk that does not end on a varint's last byte would lend its tail
    # to the next chunk's first varint, so it must be caught before the
    # chunks are decoded as one buffer.
    dangling = np.zeros(len(bounds), dtype=bool)
    dangling[sizes > 0] = buf[bounds[sizes > 0] - 1] >= _HIGH
    bad = np.flatnonzero(dangling | (per_chunk != counts))
    if len(bad):
        i = int(bad[0])
        if dangling[i]:
            raise CodecError("the last varint runs off the end of the data", first + i)
        raise CodecError(f"holds {per_chunk[i]} values, the record says {counts[i]}", first + i)


def _long_varints(buf: UInt8Array, cont: IntArray) -> tuple[IntArray, IntArray, UInt64Array]:
    """The varints of two bytes or more: the index of their first and of
    their last byte, and their values. They are few (a delta of 64 ns or more), so this works on
    the runs of continuation bytes, never on the whole buffer. Every run
    ends inside `buf` (`_check_chunks` refused a dangling one).

    Raises _Overlong at a byte that makes its varint longer than 64 bits."""
    breaks = np.flatnonzero(np.diff(cont) != 1) + 1
    starts = cont[np.concatenate(([0], breaks))]
    ends = cont[np.concatenate((breaks - 1, [len(cont) - 1]))] + 1  # each varint's last byte
    lengths = ends - starts + 1
    # The tenth byte of a varint may only hold bit 63.
    too_long = np.flatnonzero(
        (lengths > _MAX_VARINT_BYTES) | ((lengths == _MAX_VARINT_BYTES) & (buf[ends] > 1))
    )
    if len(too_long):
        raise _Overlong(int(starts[too_long[0]]) + _MAX_VARINT_BYTES - 1)
    values = np.zeros(len(starts), dtype=np.uint64)
    for k in range(int(lengths.max())):
        has = lengths > k
        part = (buf[starts[has] + k] & _LOW7).astype(np.uint64)
        values[has] |= part << np.uint64(7 * k)
    return starts, ends, values


def _drop_continuations(
    small: UInt8Array, is_cont: npt.NDArray[np.bool_], starts: IntArray, ends: IntArray,
    deltas: Int64Array,
) -> None:
    """deltas[...] = the bytes of `small` that end a varint, widened with
    their sign. The varints of two bytes or more (`starts`..`ends`) are
    usually few: then the spans between them are copied straight into
    `deltas`, a slice each, which beats a mask pass over every byte."""
    signed = small.view(np.int8)
    if len(starts) * _SPAN_BYTES > len(small):
        deltas[...] = signed[~is_cont]
        return
    at = prev = 0
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        n = start - prev
        deltas[at : at + n] = signed[prev:start]
        at, prev = at + n, end
    deltas[at:] = signed[prev:]


def _unzigzag(z: UInt64Array) -> UInt64Array:
    """(z >> 1) ^ -(z & 1), in place in `z` (one temporary, not three)."""
    sign = z & _U1
    np.negative(sign, out=sign)  # 0 or all ones: uint64 wraps
    np.right_shift(z, _U1, out=z)
    np.bitwise_xor(z, sign, out=z)
    return z


def _decode_block(chunks: Sequence[tuple[str | bytes, int]], first: int, out: UInt64Array) -> None:
    """Decode consecutive chunks (the first is chunk `first` of the call)
    into `out`, which has room for exactly their values.

    Almost every delta between successive samples fits one varint byte, so
    the bytes are decoded as one-byte varints in 8-bit arithmetic (a pass
    over the bytes, no 8-byte temporary per byte) and the few longer
    varints apart, then put in their places. The deltas are widened
    straight into `out` and summed there: no temporary of 8 bytes a sample."""
    raws = [_b64(data, first + i) for i, (data, _) in enumerate(chunks)]
    counts = np.fromiter((count for _, count in chunks), dtype=np.int64, count=len(chunks))
    buf = np.frombuffer(b"".join(raws), dtype=np.uint8)
    bounds = np.cumsum(np.fromiter(map(len, raws), dtype=np.int64, count=len(raws)))
    is_cont = buf >= _HIGH
    cont = np.flatnonzero(is_cont)
    _check_chunks(buf, cont, bounds, counts, first)
    if len(cont) == len(buf):
        return
    # The zig-zag of a one-byte varint in 8 bits: (b >> 1) ^ -(b & 1) is in
    # -64..63; a continuation byte gives garbage here, dropped below.
    small = buf >> _U8_1
    sign = buf & _U8_1
    np.negative(sign, out=sign)
    np.bitwise_xor(small, sign, out=small)
    deltas = out.view(np.int64)
    if len(cont):
        try:
            long_starts, long_ends, long_values = _long_varints(buf, cont)
        except _Overlong as e:
            chunk = first + int(np.searchsorted(bounds, e.byte, side="right"))
            raise CodecError("a varint is longer than 64 bits", chunk) from None
        _drop_continuations(small, is_cont, long_starts, long_ends, deltas)
        # A varint's index among the values: its last byte's index less the
        # continuation bytes before it.
        out[long_ends - np.searchsorted(cont, long_ends)] = _unzigzag(long_values)
    else:
        deltas[...] = small.view(np.int8)
    # Restart the running sum at every chunk: subtract the previous chunk's
    # total from its first delta, so one cumsum decodes all chunks.
    firsts = (np.cumsum(counts) - counts)[counts > 0]
    totals = np.add.reduceat(out, firsts)
    out[firsts[1:]] -= totals[:-1]
    np.cumsum(out, out=out)  # in place: each sum needs only the one before


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
        n = sum(count for _, count in chunks[first:last])
        _decode_block(chunks[first:last], first, out[done : done + n])
        done += n
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
