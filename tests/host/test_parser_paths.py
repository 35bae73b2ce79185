"""The parser's samples fast path against its plain path (issue 22).

`StreamParser(fast=False)` reads every record the plain way: json, then the
schema check. The fast path must give exactly the same records, bodies,
issues, log and assembled figures: for every corpus stream (good and
damaged), for streams in the agent's layout with sweep points and
attributes, for hand-made lines at every edge of the samples layout, and
for byte mutations of all of them. (tests/agent/test_golden.py does the
same for a real agent's stream.)
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from rtbench.model import Point, Run
from rtbench.stream import (
    ParseResult,
    StreamWriter,
    UnsupportedStreamVersion,
    assemble,
    crc32,
    encode_zzd,
    fastpath,
    parse_lines,
)
from rtbench.stream.parser import PREFIX

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
STREAMS = sorted(CORPUS.glob("*.rtb"))


def figures(run: Run) -> list[Any]:
    """Everything a run's reader sees, numpy arrays as lists."""
    out: list[Any] = [run.hello, run.bye, run.warnings, run.issues, run.log]
    for c in run.cases:
        out.append((c.case, c.title, c.params, c.outcome, c.duration_ns, c.reason, c.checks))
        out.append(c.warnings)
        for s in c.series:
            samples = None if s.samples is None else s.samples.tolist()
            out.append((s.name, s.point, s.unit, s.kind, s.attrs, s.hist))
            out.append((s.n, s.min, s.max, s.sum, s.dropped, s.holes, samples))
    return out


def records(result: ParseResult) -> list[Any]:
    # json.dumps: the bodies' key order too (the store and exports keep it).
    return [(r.seq, r.kind, json.dumps(r.body), r.line, r.version) for r in result.records]


def both(lines: list[bytes]) -> ParseResult:
    """Parse `lines` both ways, assert they agree, return the fast result."""
    try:
        plain = parse_lines(lines, fast=False)
    except UnsupportedStreamVersion as e:
        with pytest.raises(UnsupportedStreamVersion, match=str(e).split(":")[0]):
            parse_lines(lines)
        return ParseResult()
    fast = parse_lines(lines)
    assert records(fast) == records(plain)
    assert fast.issues == plain.issues
    assert fast.log == plain.log
    assert figures(assemble(fast.records, fast.issues, fast.log)) == figures(
        assemble(plain.records, plain.issues, plain.log)
    )
    return fast


def sealed(text: bytes, seq: int = 0) -> bytes:
    head = b"1 %d samples " % seq
    return PREFIX + head + text + b" %08x" % crc32(head + text)


def resealed(line: bytes) -> bytes:
    """A record line with its CRC recomputed over whatever it now holds."""
    at = line.find(PREFIX)
    if at < 0 or len(line) < at + len(PREFIX) + 9:
        return line
    text = line[at + len(PREFIX) : -9]
    return line[: at + len(PREFIX)] + text + b" %08x" % crc32(text)


def sweep_stream() -> bytes:
    """The agent's layout with what a sweep adds: points, attributes, kinds,
    many chunks of several series, one of them with the int64 extremes."""
    w = StreamWriter()
    w.hello()
    w.begin("THR-SW")
    for n in (2, 5, 1000):
        values = [(i * 7919 * n) % 100_003 - 50_000 for i in range(300)]
        point: Point = {"n": n, "mode": "pipe"}
        attrs: Point = {"cpu": n % 3}
        w.series("THR-SW", "switch", values, point, chunk=64, kind="latency", attrs=attrs)
    w.series("THR-SW", "edges", [0, -(1 << 63), (1 << 63) - 1, -1, 1], chunk=2, unit="cycles")
    w.end("THR-SW")
    w.bye()
    return "".join(w.lines).encode()


def test_every_corpus_stream_reads_the_same_both_ways() -> None:
    fast_lines = 0
    for path in STREAMS:
        lines = path.read_bytes().split(b"\n")
        both(lines)
        if path.name.startswith("good"):
            for line in lines:
                if b" samples " in line[:40]:
                    at = line.index(b"{")
                    got = fastpath.samples_body(line, at, len(line.rstrip(b"\r")) - 9, {})
                    fast_lines += got is not None
    # The good streams' samples records do take the fast path (else this
    # test compared the plain path with itself).
    assert fast_lines >= 10


def test_a_sweep_in_the_agents_layout_reads_the_same_both_ways() -> None:
    result = both(sweep_stream().split(b"\n"))
    samples = [r for r in result.records if r.kind == "samples"]
    assert len(samples) > 10 and all(r.checked for r in samples)
    # Each record has its own point: the template's is copied, not shared.
    points = [r.body["point"] for r in samples if "point" in r.body]
    assert len({id(p) for p in points}) == len(points) > 10


GOOD = b'{"case":"C","series":"s","enc":"zzd-varint-b64","offset":0,"count":2,"data":"AgI="}'
EDGES = [
    GOOD,
    GOOD.replace(b'"AgI="', b'"Ag\\u0049="'),  # an escape json reads as a letter
    GOOD.replace(b'"AgI="', b'"Ag\\/="'),
    GOOD.replace(b'"AgI="', b'"Ag\tI="'),  # a raw control byte: no JSON
    GOOD.replace(b'"AgI="', b'"Ag\x7fI="'),  # DEL is JSON, not base64
    GOOD.replace(b'"AgI="', '"Agé="'.encode()),
    GOOD.replace(b'"AgI="', b'"Ag\xffI="'),  # not UTF-8
    GOOD.replace(b'"AgI="', b'"Ag"I="'),
    GOOD.replace(b'"AgI="', b'""'),
    GOOD.replace(b'"AgI="', b'"'),
    GOOD.replace(b'"AgI="', b'"AgI=" '),
    GOOD.replace(b'"AgI="', b'"AgI"'),  # bad base64: the assembler's issue
    GOOD.replace(b'"count":2', b'"count":3'),
    GOOD.replace(b'"count":2', b'"count":0').replace(b'"AgI="', b'""'),
    GOOD.replace(b'"offset":0', b'"offset":00'),
    GOOD.replace(b'"offset":0', b'"offset":-1'),
    GOOD.replace(b'"offset":0', b'"offset":0.0'),
    GOOD.replace(b'"offset":0', b'"offset":18446744073709551615'),
    GOOD.replace(b'"offset":0', b'"offset":18446744073709551616'),
    GOOD.replace(b'"offset":0', b'"offset":100000000000000000000000'),
    GOOD.replace(b'"offset":0', b'"offset": 0'),
    GOOD.replace(b'{"case"', b'{ "case"'),
    GOOD.replace(b'"enc":"zzd-varint-b64"', b'"enc":"zzd-varint-b65"'),
    GOOD.replace(b'"enc":"zzd-varint-b64",', b""),
    GOOD.replace(b'"case":"C","series":"s",', b""),
    GOOD.replace(b'"case":"C"', b'"case":"\\ud800"'),
    GOOD.replace(b'"case":"C"', b'"case":"\xff"'),
    GOOD.replace(b'"case":"C"', b'"case":"\\"offset\\":1,"'),
    GOOD.replace(b'"case":"C"', b'"case":"C","x":1e999'),
    GOOD.replace(b'"case":"C"', b'"case":"C","x":NaN'),
    GOOD.replace(b'"case":"C"', b'"case":"C","x":1' + b"0" * 5000),
    GOOD.replace(b'"case":"C"', b'"case":"C","point":{"n":2,"m":"a"},"attrs":{"k":"v"}'),
    GOOD.replace(b'"case":"C"', b'"case":"C","point":{"n":[2]}'),
    GOOD.replace(b'"case":"C"', b'"case":"C","point":{"n":2.5}'),
    GOOD.replace(b'"case":"C"', b'"case":"C","extra":[1,2]'),
    GOOD.replace(b'"case":"C"', b'"case":"C","kind":"NotAKind"'),
    # Keys twice: json keeps the first place and the last value.
    GOOD.replace(b'"case":"C"', b'"case":"C","offset":7,"data":"x","count":1'),
    GOOD.replace(b'"case":"C"', b'"case":"D","case":"C"'),
    # A prefix ending inside a key: `"x\"offset"` is one key, not offset.
    GOOD.replace(b'"offset":0', b'"offset":9,"x\\"offset":0'),
    GOOD.replace(b'"offset":0', b'"x\\"offset":0'),
    GOOD.replace(b'"offset":0', b'"x":{"y":"offset":0'),
    GOOD.replace(b'"offset":0', b'"x":["offset":0'),
    GOOD.replace(b'"offset":0,"count":2', b'"count":2,"offset":0'),
    GOOD.replace(b'"data":"AgI="', b'"data":"AgI=","more":1'),
    GOOD.replace(b'{"case":"C","series":"s","enc":"zzd-varint-b64",', b"{"),
    GOOD.replace(b'{"case":"C","series":"s","enc":"zzd-varint-b64",', b"{,"),
    GOOD[:-1] + b"}}",
    b"[" + GOOD[1:-1] + b"]",
]


@pytest.mark.parametrize("body", EDGES, ids=range(len(EDGES)))
def test_each_edge_of_the_samples_layout_reads_the_same_both_ways(body: bytes) -> None:
    lines = [sealed(body, 0), sealed(body.replace(b'"C"', b'"C2"'), 1)]
    both(lines)
    both([line + b"\r" for line in lines])


def test_the_fast_path_is_taken_only_for_the_agents_layout() -> None:
    def fast(body: bytes) -> bool:
        return fastpath.samples_body(body, 0, len(body), {}) is not None

    assert fast(GOOD)
    point = GOOD.replace(b'"case":"C"', b'"case":"C","point":{"n":2,"m":"a"}')
    assert fast(point)
    # Data that is no plain JSON string: escapes, a control byte, non-ASCII,
    # a quote, a cut; and a prefix that ends inside a key.
    for data in [b"Ag\\u0049=", b"Ag\\/=", b"Ag\tI=", "Agé=".encode(), b'Ag"I=', b"AgI\x00"]:
        assert not fast(GOOD.replace(b"AgI=", data)), data
    assert not fast(GOOD.replace(b'"offset":0', b'"x\\"offset":0'))


def test_many_series_overflow_the_templates_and_still_agree() -> None:
    lines = [
        sealed(GOOD.replace(b'"series":"s"', b'"series":"s%d"' % i), i)
        for i in range(fastpath._TEMPLATES + 50)
    ]
    result = both(lines)
    assert len(result.records) == len(lines)


def test_byte_mutations_read_the_same_both_ways() -> None:
    rng = random.Random(22)
    bases = [p.read_bytes() for p in STREAMS if "newer" not in p.name]
    bases.append(sweep_stream())
    alphabet = [b"\\", b'"', b"\t", b"\x00", b"\xc3\xa9", b"\xff", b"0", b",", b"}", b"=", b" "]
    for _ in range(1500):
        lines = rng.choice(bases).split(b"\n")
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(lines))
            line = bytearray(lines[i])
            at = rng.randrange(len(line) + 1)
            roll = rng.random()
            if roll < 0.4:
                line[at:at] = rng.choice(alphabet)
            elif roll < 0.7 and line:
                del line[at : at + rng.randrange(1, 4)]
            elif line:
                line[min(at, len(line) - 1)] ^= 1 << rng.randrange(8)
            lines[i] = resealed(bytes(line)) if rng.random() < 0.8 else bytes(line)
        both(lines)


def test_chunks_of_every_size_read_the_same_both_ways() -> None:
    rng = random.Random(5)
    lines = []
    for seq, count in enumerate([0, 1, 2, 3, 4, 5, 63, 64, 65, 511, 4096]):
        values = [rng.randrange(-(1 << 40), 1 << 40) for _ in range(count)]
        body = {
            "case": "C",
            "series": "s",
            "enc": "zzd-varint-b64",
            "offset": seq * 5000,
            "count": count,
            "data": encode_zzd(values),
        }
        lines.append(sealed(json.dumps(body, separators=(",", ":")).encode(), seq))
    result = both(lines)
    assert all(r.checked for r in result.records)
