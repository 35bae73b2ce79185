"""Samples streamed out of a board while its case runs (a streamed series
holds 128 samples, 1 KiB, on mps2-an385) reach the host as exactly the
series a run that sends them in fewer, larger pieces gives. The test
firmware's `--inject series_buffer=N` clears a buffer of the whole series
(as a held series does) and sends every N samples; SEM-SHF and MUT-ARC make
their samples from arrays of stamps after their threads are joined (at 128
samples: one block of stamps, rtb_stamp_block; a longer run turns each
block into samples between blocks, where N would move the stamps), so
under -icount two runs that differ only in N measure the same stamps, and
only the records differ. N is 999 or 064: the same command-line length and
the same branches in the firmware, since -icount counts every instruction
(one more store before the measured windows moves the stamps against the
25 MHz counter by 40 ns, and a case after another one starts at a phase
the one before left). A record holds 256 samples at most on this board, so
no series of these is ever a single record."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tools

from rtbench.run.measure import measure, plan_for
from rtbench.stream.parser import Record
from rtbench.targets import resolve
from rtbench.targets.qemu_board import BoardTarget

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

SPEC = "qemu:freertos-mps2-an385?flavor=test"


def series(
    case: str, buffer: str, extra: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """Per series: its samples, and the offsets of its samples records."""
    target = resolve(SPEC)
    assert isinstance(target, BoardTarget)
    transport = target.transport()
    offsets: dict[str, list[int]] = {}

    def on_record(r: Record, _: object) -> None:
        if r.kind == "samples":
            offsets.setdefault(r.body["series"], []).append(r.body["offset"])

    try:
        args = [*extra, "--inject", f"series_buffer={buffer}", case]
        run = measure(transport, plan_for(target, args), on_record=on_record).run
    finally:
        transport.stop()
    assert run.complete, run.issues
    (result,) = run.cases
    assert result.outcome == "passed", result
    out = {}
    for s in result.series:
        assert s.samples is not None and s.holes == 0 and s.dropped == 0, s.label
        assert len(s.samples) == s.n and int(s.samples.sum()) == s.sum, s.label
        out[s.name] = s.samples
    return out, offsets


def chunks(n: int, buffer: int) -> list[int]:
    """Offsets of the records of n samples sent every `buffer` (and at the
    end), a record of 256 at most."""
    return [o for b in range(0, n, buffer) for o in range(b, min(b + buffer, n), 256)]


@pytest.mark.parametrize(
    ("case", "extra", "least"),
    [
        ("SEM-SHF:duration_ms=100", ("--max-samples", "128"), 128),
        ("MUT-ARC:iterations=128", (), 128),
    ],
)
def test_chunks_streamed_between_windows_reassemble_the_same_series(
    case: str, extra: tuple[str, ...], least: int
) -> None:
    tools.firmware("freertos", "mps2-an385", "test")
    large, large_at = series(case, "999", extra)
    small, small_at = series(case, "064", extra)
    assert large.keys() == small.keys() and large
    for name, samples in large.items():
        n = len(samples)
        assert n >= least, name
        assert large_at[name] == chunks(n, 999), (name, large_at[name])
        assert small_at[name] == chunks(n, 64) == list(range(0, n, 64)), (name, small_at[name])
        assert np.array_equal(samples, small[name]), name
