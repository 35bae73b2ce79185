"""The CRC and the `zzd-varint-b64` sample encoding (rtbench.stream.codec)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from rtbench.stream import codec
from rtbench.stream.codec import (
    CodecError,
    crc32,
    decode_chunks,
    decode_zzd,
    encode_varints,
    encode_zzd,
    zigzag_deltas,
)

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
EXTREMES = [0, INT64_MAX, INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN, INT64_MIN, 0, INT64_MAX]


def reference_decode(data: str, count: int) -> list[int]:
    """A byte-at-a-time decoder, straight from the grammar, to check the fast one."""
    values, value, shift, prev = [], 0, 0, 0
    for byte in base64.b64decode(data, validate=True):
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            delta = (value >> 1) ^ -(value & 1)
            prev = (prev + delta + (1 << 63)) % (1 << 64) - (1 << 63)
            values.append(prev)
            value, shift = 0, 0
    assert shift == 0 and len(values) == count
    return values


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def random_values(seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [
        rng.integers(INT64_MIN, INT64_MAX, size=1000, endpoint=True).tolist(),  # full range
        rng.integers(0, 100_000, size=1000).tolist(),  # latencies
        (rng.integers(-3, 4, size=1000).cumsum() + 10**12).tolist(),  # a slow drift
        rng.choice([INT64_MIN, INT64_MAX, 0, -1, 1], size=1000).tolist(),  # extremes only
    ]


def test_crc32_is_the_ieee_crc() -> None:
    assert crc32(b"123456789") == 0xCBF43926
    assert crc32(b"") == 0
    # ISA-L's CRC where it is installed, zlib's elsewhere: the same values,
    # on bytes and on a view into a line (the parser's way), at every length.
    import random
    import zlib

    rng = random.Random(32)
    for size in [*range(70), 4095, 4096, 5000, 65537]:
        data = rng.randbytes(size + 3)
        assert crc32(memoryview(data)[3:]) == crc32(data[3:]) == zlib.crc32(data[3:]), size


def test_grammar_example() -> None:
    # Bytes 02 04 06: zig-zag 1, 2, 3 are the deltas of 1, 3, 6.
    assert decode_zzd("AgQG", 3).tolist() == [1, 3, 6]
    assert encode_zzd([1, 3, 6]) == "AgQG"


def test_zigzag_and_varints_by_hand() -> None:
    assert zigzag_deltas([0, -1, 0, 1]) == [0, 1, 2, 2]
    # INT64_MIN -> INT64_MAX is a delta of -1 once wrapped to int64.
    assert zigzag_deltas([INT64_MIN, INT64_MAX]) == [(1 << 64) - 1, 1]
    assert encode_varints([0, 127, 128, 300]) == bytes([0, 127, 0x80, 1, 0xAC, 2])
    assert encode_varints([(1 << 64) - 1]) == b"\xff" * 9 + b"\x01"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_round_trip_random(seed: int) -> None:
    for values in random_values(seed):
        data = encode_zzd(values)
        decoded = decode_zzd(data, len(values))
        assert decoded.dtype == np.int64
        assert decoded.tolist() == values == reference_decode(data, len(values))


@pytest.mark.parametrize(
    "values",
    [[], [0], [INT64_MIN], [INT64_MAX], EXTREMES, [INT64_MIN, INT64_MAX] * 50],
)
def test_round_trip_extremes(values: list[int]) -> None:
    assert decode_zzd(encode_zzd(values), len(values)).tolist() == values


def test_chunks_decode_on_their_own() -> None:
    parts = [EXTREMES, [], [5, 6, 7], [INT64_MIN], *random_values(4)]
    chunks = [(encode_zzd(p), len(p)) for p in parts]
    assert decode_chunks(chunks).tolist() == [v for p in parts for v in p]


def test_many_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Force one numpy pass per few chunks, so block boundaries fall everywhere.
    monkeypatch.setattr(codec, "_BLOCK_CHARS", 40)
    parts = [values[i : i + 37] for values in random_values(5) for i in range(0, 1000, 37)]
    chunks = [(encode_zzd(p), len(p)) for p in parts]
    assert decode_chunks(chunks).tolist() == [v for p in parts for v in p]
    bad = 50
    chunks[bad] = (chunks[bad][0], chunks[bad][1] + 1)
    with pytest.raises(CodecError) as e:
        decode_chunks(chunks)
    assert e.value.chunk == bad


def test_one_byte_and_long_varints_mixed() -> None:
    """The decoder's two paths: deltas of one varint byte (-64..63) decoded
    in 8 bits, longer ones apart; all one-byte, all long, and mixed, each
    long enough for the vectorised decoder."""
    rng = np.random.default_rng(7)
    small = np.cumsum(rng.integers(-64, 64, 5000)).tolist()
    large = np.cumsum(rng.integers(-(1 << 40), 1 << 40, 5000)).tolist()
    mixed = [v for pair in zip(small, large, strict=True) for v in pair]
    for values in (small, large, mixed, [*small, INT64_MIN, INT64_MAX, *small]):
        assert decode_zzd(encode_zzd(values), len(values)).tolist() == values


@pytest.mark.parametrize("span_bytes", [0, 10**9])
def test_both_ways_to_drop_continuation_bytes(
    monkeypatch: pytest.MonkeyPatch, span_bytes: int
) -> None:
    """Slice copies between the long varints (few of them) or one mask pass
    (many): forced each way, over chunks that start and end with long
    varints, hold runs of them, or none."""
    monkeypatch.setattr(codec, "_SPAN_BYTES", span_bytes)
    rng = np.random.default_rng(11)
    parts = []
    for _ in range(60):
        deltas = rng.integers(-64, 64, int(rng.integers(0, 300)))
        longs = rng.random(len(deltas)) < rng.choice([0.0, 0.01, 0.3, 1.0])
        deltas[longs] = rng.integers(-(1 << 50), 1 << 50, int(longs.sum()))
        parts.append(np.cumsum(deltas).tolist())
    parts += [[INT64_MIN, 0, INT64_MAX], [5 << 40], []]
    chunks = [(encode_zzd(p), len(p)) for p in parts]
    assert decode_chunks(chunks).tolist() == [v for p in parts for v in p]


def test_bytes_and_str_data_alike() -> None:
    data = encode_zzd(EXTREMES)
    assert decode_zzd(data.encode(), len(EXTREMES)).tolist() == EXTREMES


def test_decoded_is_contiguous_int64() -> None:
    decoded = decode_chunks([(encode_zzd([1, 2]), 2), (encode_zzd([3]), 1)])
    assert decoded.dtype == np.int64 and decoded.flags.c_contiguous


@pytest.mark.parametrize(
    ("data", "count", "message"),
    [
        ("AgQ", 3, "bad base64"),  # padding missing
        ("Ag*G", 3, "bad base64"),  # not in the alphabet
        ("Ag QG", 3, "bad base64"),  # whitespace inside
        ("AgQGé", 3, "bad base64"),  # not ASCII
        ("AgQG", 4, "holds 3 values, the record says 4"),
        ("AgQG", 2, "holds 3 values, the record says 2"),
        (b64(b"\x02\x84"), 2, "runs off the end"),
        (b64(b"\x80"), 1, "runs off the end"),
        ("", 1, "a count of 1 does not fit 0 characters"),
        ("AgQG", -1, "a count of -1 does not fit"),
        ("AgQG", 10**18, "a count of 1000000000000000000 does not fit 4 characters"),
        (b64(b"\xff" * 10 + b"\x01"), 1, "longer than 64 bits"),  # 11 bytes
        (b64(b"\xff" * 9 + b"\x02"), 1, "longer than 64 bits"),  # bit 64 set
    ],
)
def test_malformed_data(data: str, count: int, message: str) -> None:
    with pytest.raises(CodecError, match=message) as e:
        decode_zzd(data, count)
    assert isinstance(e.value, ValueError)
    assert str(e.value).startswith("chunk 0: ")


def test_the_longest_varint_is_fine() -> None:
    # Ten bytes whose last holds only bit 63: zig-zag 2**64 - 1, delta INT64_MIN.
    assert decode_zzd(b64(b"\xff" * 9 + b"\x01"), 1).tolist() == [INT64_MIN]


@pytest.mark.parametrize(
    "bad",
    [
        ("AgQ", 3),
        (b64(b"\x02\x84"), 2),
        (b64(b"\xff" * 10 + b"\x01"), 1),
        (encode_zzd([1, 2]), 3),
    ],
)
def test_error_names_the_chunk(bad: tuple[str, int]) -> None:
    good = (encode_zzd([1, 2, 3]), 3)
    with pytest.raises(CodecError) as e:
        decode_chunks([good, good, bad, good])
    assert e.value.chunk == 2
    assert str(e.value).startswith("chunk 2: ")


def test_a_dangling_varint_does_not_borrow_from_the_next_chunk() -> None:
    # Chunk 0 ends on a continuation byte; joined with chunk 1 it would
    # decode as two values, the count the two records claim together.
    with pytest.raises(CodecError, match="runs off the end") as e:
        decode_chunks([(b64(b"\x02\x84"), 1), (b64(b"\x01\x02"), 1)])
    assert e.value.chunk == 0


def test_the_fast_base64_accepts_only_what_binascii_does() -> None:
    """The decoder takes pybase64's bytes when it accepts the text and asks
    binascii's strict mode (its verdict and its words) when it refuses: so
    whatever pybase64 accepts, binascii must accept with the same bytes.
    Every string of up to 5 characters over a mixed alphabet, and random
    longer ones."""
    import binascii
    import itertools
    import random

    import pybase64

    def both(text: bytes) -> None:
        try:
            fast = pybase64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return
        assert binascii.a2b_base64(text, strict_mode=True) == fast, text

    for size in range(6):
        for letters in itertools.product(b"AB/+=z-\n", repeat=size):
            both(bytes(letters))
    rng = random.Random(22)
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
    for _ in range(20_000):
        both(bytes(rng.choice(alphabet) for _ in range(rng.randrange(40))))
    # Padding after a whole group: binascii takes it, pybase64 does not.
    padded = codec.decode_zzd("AgIC=", 3).tolist()
    assert padded == codec.decode_zzd("AgIC", 3).tolist() == [1, 2, 3]
