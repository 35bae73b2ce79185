"""Generate the stream corpus in this directory (see README.md).

    python tests/corpus/make_corpus.py           # write the *.rtb files
    python tests/corpus/make_corpus.py --check   # exit 1 if a file differs

Everything is deterministic (fixed seeds, no clock), so the committed files
must equal what `build()` returns; tests/host/test_corpus.py checks that.
Damage is applied to the lines of a valid run by line number, so the README's
line numbers follow from the run below: change it and they move.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rtbench.stream.codec import crc32
from rtbench.stream.parser import PREFIX
from rtbench.stream.writer import StreamWriter, default_hello

HERE = Path(__file__).resolve().parent
INT64_MIN, INT64_MAX, UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
SUB_BITS = 3
CHUNK = 8  # small chunks, so that a series spans several samples records


def latencies(seed: int, n: int, base: int) -> list[int]:
    # random.Random.random() is reproducible across Python versions.
    rng = random.Random(seed)
    return [base + int(rng.random() * rng.random() * 4 * base) for _ in range(n)]


def log2_counts(values: Sequence[int], sub_bits: int) -> list[tuple[int, int]]:
    """Sparse log2 histogram counts as the agent computes them (values >= 0)."""
    counts: dict[int, int] = {}
    for v in values:
        shift = max(0, v.bit_length() - 1 - sub_bits)
        index = (shift << sub_bits) + (v >> shift)
        counts[index] = counts.get(index, 0) + 1
    return sorted(counts.items())


def full_series(
    w: StreamWriter, case: str, name: str, values: list[int], **point: int | str
) -> None:
    """samples + hist + summary, as the agent sends a series."""
    w.samples(case, name, values, point=point, chunk=CHUNK)
    stats: dict[str, Any] = {
        "n": len(values),
        "min": min(values),
        "max": max(values),
        "sum": sum(values),
    }
    layout = {"kind": "log2", "sub_bits": SUB_BITS}
    w.hist(case, name, layout=layout, counts=log2_counts(values, SUB_BITS), point=point, **stats)
    w.summary(case, name, point=point, **stats)


def small_run() -> list[str]:
    """A complete two-case run: the base of every file but the special ones.

    Lines (1-based) = seq + 1:
      1 hello | 2 begin CAL-TIMER | 3-5 samples latency (offsets 0, 8, 16)
      6 hist | 7 summary | 8 check | 9 end CAL-TIMER | 10 begin THR-SW
      11-12 samples switch[n=2] | 13 hist | 14 summary
      15-16 samples switch[n=5] | 17 hist | 18 summary
      19 warn tick_in_window (THR-SW) | 20 check | 21 end THR-SW
      22 warn affinity (run-wide) | 23 bye (records 23)
    """
    w = StreamWriter()
    w.hello(default_hello(["CAL-TIMER", "THR-SW"]))
    w.begin("CAL-TIMER", "Timer calibration", {"duration_ms": 100, "cpu": 1, "priority": 80})
    full_series(w, "CAL-TIMER", "latency", latencies(1, 20, 900))
    w.check("CAL-TIMER", "monotonic", "pass", "20 of 20 reads increased")
    w.end("CAL-TIMER", "passed", duration_ns=101_000_000)
    w.begin("THR-SW", "Switch between threads of the same priority", {"n": [2, 5], "cpu": 1})
    full_series(w, "THR-SW", "switch", latencies(2, 12, 1500), n=2)
    full_series(w, "THR-SW", "switch", latencies(3, 10, 1700), n=5)
    w.warn("tick_in_window", "2 scheduler ticks fell in the window", case="THR-SW")
    w.check("THR-SW", "alternation", "pass", "A and B alternated 22 times")
    w.end("THR-SW", "passed", duration_ns=302_000_000)
    w.warn("affinity", "CPU 1 shares a core with CPU 0")
    w.bye()
    return w.lines


def extremes_run() -> list[str]:
    """0 and the int64/uint64 limits wherever the grammar allows them."""
    w = StreamWriter()
    w.hello(default_hello(["EXT"]))
    w.begin("EXT", "Extreme values", {"limit": INT64_MAX, "floor": INT64_MIN, "mask": UINT64_MAX})
    # Deltas between neighbours overflow int64 in both directions.
    values = [0, INT64_MAX, INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN, INT64_MIN, 0]
    w.samples("EXT", "raw", values, chunk=4, unit="cycles")
    w.samples("EXT", "zeros", [0] * 5)
    w.hist(
        "EXT",
        "raw",
        layout={"kind": "linear", "lo": INT64_MIN, "width": UINT64_MAX, "buckets": 1},
        counts=[(0, len(values))],
        n=len(values),
        min=INT64_MIN,
        max=INT64_MAX,
        sum=sum(values),
        overflow=0,
        unit="cycles",
    )
    w.summary("EXT", "raw", n=len(values), min=INT64_MIN, max=INT64_MAX, sum=sum(values))
    w.summary("EXT", "zeros", n=UINT64_MAX, min=0, max=0, sum=0, dropped=UINT64_MAX - 5)
    w.check("EXT", "limits", "pass", "")
    w.end("EXT", "passed", duration_ns=INT64_MAX)
    w.bye()
    return w.lines


# Quotes, backslashes, escaped newlines, control characters, UTF-8 in
# several scripts, a line separator that str.splitlines() would split on,
# and the record prefix itself inside a string.
AWKWARD = (
    'say "hi"\\n\\\\ back\\slash\nnew line\ttab\r\x01 été µs 日本語 🙂 \u2028 @rtb 1 0 hello {}'
)


def strings_run() -> list[str]:
    w = StreamWriter()
    hello = default_hello(['STR"1'])
    hello["cpu"]["model"] = "Ünïcödé CPU ™"
    w.hello(hello)
    w.begin('STR"1', AWKWARD, {"label": AWKWARD, "ключ": "значение"})
    w.samples('STR"1', "naïve/series", [1, 2, 3], point={"mode": 'a"b\\c'})
    w.check('STR"1', AWKWARD, "fail", AWKWARD)
    w.warn("clamped", AWKWARD, case='STR"1')
    w.end('STR"1', "failed", duration_ns=5, reason=AWKWARD)
    w.bye()
    return w.lines


# --- damage, applied to the lines of small_run() by 1-based line number

Edit = Callable[[list[bytes]], list[bytes]]


def encoded(lines: list[str]) -> list[bytes]:
    return [line.encode("utf-8") for line in lines]


def spliced(lines: list[bytes], line_no: int, *new: bytes) -> list[bytes]:
    """`lines` with line `line_no` (1-based) replaced by `new` (none: removed)."""
    return lines[: line_no - 1] + list(new) + lines[line_no:]


def resealed(line: bytes, pattern: bytes, repl: bytes) -> bytes:
    """`line` with `pattern` replaced and the CRC recomputed, as if the agent
    had written the new content."""
    text, n = re.subn(pattern, lambda _: repl, line[len(PREFIX) : -10], count=1)
    assert n == 1, (pattern, line)
    return PREFIX + text + b" %08x\n" % crc32(text)


def damaged(edit: Edit) -> bytes:
    return b"".join(edit(encoded(small_run())))


def truncated_line(lines: list[bytes]) -> list[bytes]:
    # Line 8 (check) loses its second half; the writer went on with line 9.
    return spliced(lines, 8, lines[7][:40] + b"\n")


def flipped_byte(lines: list[bytes]) -> list[bytes]:
    # A bit error in the data of line 4 (samples latency, offset 8).
    line = bytearray(lines[3])
    line[line.index(b'"data":"') + 10] ^= 0x01
    return spliced(lines, 4, bytes(line))


def missing_seq(lines: list[bytes]) -> list[bytes]:
    # Line 9 (end CAL-TIMER, seq 8) never arrives.
    return spliced(lines, 9)


def repeated_seq(lines: list[bytes]) -> list[bytes]:
    # Line 11 (samples switch[n=2], seq 10) arrives twice.
    return spliced(lines, 11, lines[10], lines[10])


def noise_in_record(lines: list[bytes]) -> list[bytes]:
    # A kernel message breaks line 12 (samples switch[n=2], seq 11) in two.
    line = lines[11]
    cut = line.index(b'"data":"') + 4
    kmsg = b"[   12.345678] e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex\n"
    return spliced(lines, 12, line[:cut] + kmsg, line[cut:])


def cut_before_bye(lines: list[bytes]) -> list[bytes]:
    return lines[:22]


def cut_in_samples(lines: list[bytes]) -> list[bytes]:
    # The stream stops in the data of line 16 (samples switch[n=5], offset 8).
    return [*lines[:15], lines[15][: lines[15].index(b'"data":"') + 12]]


def not_utf8(lines: list[bytes]) -> list[bytes]:
    # A Latin-1 noise line before line 8, which moves the check (seq 7) to
    # line 9; the check's detail holds Latin-1 bytes under a right CRC (the
    # agent wrote those bytes), so it is not UTF-8.
    check = resealed(lines[7], rb'"detail":"[^"]*"', b'"detail":"\xe9t\xe9"')
    return spliced(lines, 8, b"U-Boot 2024.01 (\xe9t\xe9 build)\n", check)


def bad_base64(lines: list[bytes]) -> list[bytes]:
    # Line 5 (samples latency, offset 16) has a right CRC but data that is not base64.
    return spliced(lines, 5, resealed(lines[4], rb'"data":"[^"]*"', b'"data":"AQ*D!"'))


def bad_records(lines: list[bytes]) -> list[bytes]:
    """Intact lines (right CRC) whose content the host cannot use."""
    edits = {
        7: (rb'"n":20', b'"n":"20"'),  # summary latency: n is a string
        8: (rb'"verdict":"pass"', b'"verdict":"maybe"'),  # check: unknown verdict
        9: (rb'"result":"passed",', b""),  # end CAL-TIMER: no result
        19: (rb" warn ", b" frobnicate "),  # a kind this host does not know
        22: (rb"\{.*\}", b'["affinity"]'),  # run-wide warn: body not an object
    }
    for line_no, (pattern, repl) in edits.items():
        lines = spliced(lines, line_no, resealed(lines[line_no - 1], pattern, repl))
    return lines


def swapped_lines(lines: list[bytes]) -> list[bytes]:
    """A transport that reorders: lines 3 and 4 (two samples chunks of
    `latency`) swapped, and the bye (line 23) ahead of the run-wide warn."""
    lines[2], lines[3] = lines[3], lines[2]
    lines[21], lines[22] = lines[22], lines[21]
    return lines


def out_of_spec(lines: list[bytes]) -> list[bytes]:
    """Right CRCs, values the schema refuses (issue 8's crash kinds among them)."""
    edits = {
        1: (rb'"clock":\{[^}]*\}', b'"clock":"tsc"'),  # hello: clock is a string
        6: (rb'"kind":"log2"', b'"kind":"log10"'),  # hist latency: a newer layout
        7: (rb'"max":\d+', b'"max":18446744073709551615'),  # summary latency: UINT64_MAX (valid)
        13: (rb'"overflow":0', b'"overflow":18446744073709551615'),  # hist: n does not add up
        17: (rb"\]\]\}\Z", b"],[17179869184,0]]}"),  # hist: a bucket index of 2**34
        18: (rb'"n":10', b'"n":18446744073709551616'),  # summary switch[n=5]: n is 2**64
    }
    for line_no, (pattern, repl) in edits.items():
        lines = spliced(lines, line_no, resealed(lines[line_no - 1], pattern, repl))
    return lines


def newer_version() -> bytes:
    w = StreamWriter(version=2)
    w.hello(default_hello(["CAL-TIMER"]), format=2)
    w.begin("CAL-TIMER", "Timer calibration")
    w.end("CAL-TIMER")
    w.bye()
    return "".join(w.lines).encode()


def with_noise() -> bytes:
    """The small run as a serial console shows it: boot log, kernel messages
    between records, timestamps in front of some records, CRLF line ends."""
    lines = encoded(small_run())
    out = [
        b"U-Boot SPL 2024.01\r\n",
        b"\r\n",
        b"[    0.000000] Linux version 6.1.0-rt (gcc 12.2.0) #1 SMP PREEMPT_RT\n",
        b"root@target:~# ./rtbench-agent --cases CAL-TIMER,THR-SW\n",
    ]
    for i, line in enumerate(lines):
        if i % 3 == 1:
            line = b"[12:00:%02d.123] " % i + line  # serial console timestamp
        if i % 4 == 2:
            line = line[:-1] + b"\r\n"
        out.append(line)
        if i % 5 == 4:
            out.append(b"[   %d.000001] rcu: INFO: rcu_preempt self-detected stall\n" % i)
    out.append(b"rtbench-agent: done, see @rtb-lines above\n")
    out.append(b"root@target:~# ")
    return b"".join(out)


def build() -> dict[str, bytes]:
    """Every corpus file, by name."""
    return {
        "good_small.rtb": "".join(small_run()).encode(),
        "good_noise.rtb": with_noise(),
        "good_extremes.rtb": "".join(extremes_run()).encode(),
        "good_strings.rtb": "".join(strings_run()).encode(),
        "damaged_truncated_line.rtb": damaged(truncated_line),
        "damaged_flipped_byte.rtb": damaged(flipped_byte),
        "damaged_missing_seq.rtb": damaged(missing_seq),
        "damaged_repeated_seq.rtb": damaged(repeated_seq),
        "damaged_noise_in_record.rtb": damaged(noise_in_record),
        "damaged_cut_before_bye.rtb": damaged(cut_before_bye),
        "damaged_cut_in_samples.rtb": damaged(cut_in_samples),
        "damaged_not_utf8.rtb": damaged(not_utf8),
        "damaged_bad_base64.rtb": damaged(bad_base64),
        "damaged_bad_records.rtb": damaged(bad_records),
        "damaged_swapped_lines.rtb": damaged(swapped_lines),
        "damaged_out_of_spec.rtb": damaged(out_of_spec),
        "damaged_newer_version.rtb": newer_version(),
    }


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, data in build().items():
        path = HERE / name
        if check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(name)
        else:
            path.write_bytes(data)
    for name in stale:
        print(f"{name} differs from make_corpus.py's output", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
