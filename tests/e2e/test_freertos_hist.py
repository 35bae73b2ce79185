"""The FreeRTOS firmware keeps fewer histogram buckets than the POSIX agent
(rtb_port_config.h: RTB_HIST_BUCKETS 528, for RAM) and says so in each
`hist` record's layout: a log2 histogram at 4 sub-bits with its 528
buckets (values past them overflow), JIT-PER's linear deviation histogram
in 4 us buckets. Known answer: with every sample kept,
the buckets recomputed from the samples by the layout the record declares
are exactly the record's counts, and n/min/max/sum are the samples' own.
Negative control: the same samples under the POSIX layout (5 sub-bits, 1 us)
do not match, so the check can fail.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import tools

from rtbench.model import Series
from rtbench.run.measure import measure, plan_for
from rtbench.targets import resolve
from rtbench.targets.qemu_board import BoardTarget

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")


def buckets(values: list[int], layout: dict[str, Any]) -> tuple[Counter[int], int, int]:
    """(counts by bucket index, underflow, overflow) as docs/wire-format.md says."""
    counts: Counter[int] = Counter()
    under = over = 0
    for v in values:
        if layout["kind"] == "log2":
            if v < 0:
                under += 1
                continue
            s = int(layout["sub_bits"])
            shift = max(0, (v | 1).bit_length() - 1 - s)
            i = (shift << s) + (v >> shift)
            if i >= int(layout.get("buckets", i + 1)):
                over += 1
            else:
                counts[i] += 1
        else:
            i = (v - int(layout["lo"])) // int(layout["width"])
            if i < 0:
                under += 1
            elif i >= int(layout["buckets"]):
                over += 1
            else:
                counts[i] += 1
    return counts, under, over


def matches(s: Series, layout: dict[str, Any]) -> bool:
    assert s.hist is not None and s.samples is not None
    counts, under, over = buckets([int(v) for v in s.samples], layout)
    return (dict(counts), under, over) == (dict(s.hist.counts), s.hist.underflow,
                                          s.hist.overflow)  # fmt: skip


def test_fewer_buckets_stay_exact_and_declared() -> None:
    tools.firmware("freertos", "mps2-an385")
    target = resolve("qemu:freertos-mps2-an385")
    assert isinstance(target, BoardTarget)
    transport = target.transport()
    try:
        args = ["SEM-SHF:duration_ms=100", "JIT-PER:cycles=300"]
        run = measure(transport, plan_for(target, args)).run
    finally:
        transport.stop()
    whole = [s for c in run.cases for s in c.series
             if s.hist is not None and s.samples is not None and s.dropped == 0
             and s.holes == 0 and len(s.samples) == s.n > 0]  # fmt: skip
    kinds = {s.hist.layout["kind"] for s in whole if s.hist is not None}
    assert kinds == {"log2", "linear"}, [(s.case, s.name, s.n, s.dropped) for s in whole]
    misfiled = set()
    for s in whole:
        h = s.hist
        assert h is not None and s.samples is not None
        v = [int(x) for x in s.samples]
        assert (h.n, h.min, h.max, h.sum) == (len(v), min(v), max(v), sum(v)), s.label
        if h.layout["kind"] == "log2":
            assert (h.layout["sub_bits"], h.layout["buckets"]) == (4, 528), h.layout
            posix: dict[str, Any] = {"kind": "log2", "sub_bits": 5}
        else:
            assert (h.layout["width"], h.layout["buckets"]) == (4000, 512), h.layout  # +-1023 us
            posix = {"kind": "linear", "lo": h.layout["lo"], "width": 1000, "buckets": 2047}
        assert matches(s, h.layout), f"{s.case} {s.label}: counts differ from the samples"
        if not matches(s, posix):
            misfiled.add(h.layout["kind"])
    # The control: under the POSIX layouts the same counts do not match.
    assert misfiled == {"log2", "linear"}
