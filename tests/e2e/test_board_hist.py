"""A board's histogram (issue 22: every case in 64 KiB): 528 buckets at 16
sub-buckets an octave, not 1024, reach values below 2^36 ns (68 s) at the
resolution 1024 gave; a value above counts as overflow, and the `hist`
record says its `buckets` (docs/wire-format.md). 2.1 KiB of counters a
series, not 4.

- On a FreeRTOS board (a real qemu-system-arm), every series' histogram of
  the quick suite is the one its samples give under the record's layout
  (bucket by bucket, overflow included), and its percentile ranges hold the
  exact figures the host computes from the samples, each at most 1/16 of
  its value wide: the figures a run's series give do not depend on the
  histogram's size when every sample is kept, and keep their resolution
  when one is not.
- The host reads a log2 layout with `buckets`: an index past them is
  damage, and an overflow's values start at the first value past them.
"""

from __future__ import annotations

import numpy as np
import pytest
from boards import quick_suite

from rtbench.analysis.stats import PERCENTILES, case_stats, has_all_samples, hist_percentile_range
from rtbench.model import Histogram
from rtbench.stream.schema import check_hist

BOARD_LAYOUT = {"kind": "log2", "sub_bits": 4, "buckets": 528}


def log2_counts(v: np.ndarray, s: int, buckets: int) -> tuple[dict[int, int], int, int]:
    """(counts by index, underflow, overflow) of samples under a log2 layout,
    as docs/wire-format.md defines it (not the agent's code)."""
    under = int((v < 0).sum())
    u = v[v >= 0].astype(np.uint64)
    k = np.floor(np.log2(np.maximum(u, 1).astype(np.float64))).astype(np.int64)
    # float log2 rounds up just below a power of two: correct it exactly.
    k -= (np.left_shift(np.uint64(1), k.astype(np.uint64)) > u) & (u > 0)
    shift = np.maximum(k - s, 0).astype(np.uint64)
    index = (shift.astype(np.int64) << s) + (u >> shift).astype(np.int64)
    over = int((index >= buckets).sum())
    idx, cnt = np.unique(index[index < buckets], return_counts=True)
    return dict(zip(idx.tolist(), cnt.tolist(), strict=True)), under, over


@pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")
def test_a_boards_smaller_histogram_is_its_samples_at_the_same_resolution(
    pytestconfig: pytest.Config,
) -> None:
    # The quick suite's run test_target_freertos.py checks too, taken once.
    run, _ = quick_suite(pytestconfig, "qemu:freertos-mps2-an385")
    assert run.complete, run.issues
    checked = bounded = 0
    for c in run.cases:
        for s in c.series:
            h = s.hist
            if h is None or h.layout.get("kind") != "log2":
                continue
            assert h.layout == BOARD_LAYOUT, (s.label, h.layout)
            if not has_all_samples(s) or s.samples is None:
                continue
            counts, under, over = log2_counts(np.asarray(s.samples), 4, 528)
            assert dict(h.counts) == counts, s.label
            assert (h.underflow, h.overflow) == (under, over), s.label
            checked += 1
            if not s.traits.stats:
                continue
            exact = case_stats(s).pct
            for q in PERCENTILES:
                lo, hi = hist_percentile_range(h, q)
                assert lo <= exact[q] <= hi, (s.label, q, lo, exact[q], hi)
                assert hi - lo <= max(hi, 0) / 16, (s.label, q, lo, hi)
                bounded += 1
    # Most of the quick suite's series keep every sample on this board.
    assert checked >= 80 and bounded >= 300, (checked, bounded)


def test_a_log2_layouts_buckets_bound_its_indices_and_start_its_overflow() -> None:
    top = 1 << 36  # the first value past 528 buckets at 16 sub-buckets
    h = Histogram(BOARD_LAYOUT, [(20, 8)], n=10, min=20, max=3 * top, sum=0, overflow=2)
    assert h.bucket_bounds(528)[0] == top
    assert log2_counts(np.array([top - 1, top, 100], dtype=np.int64), 4, 528)[2] == 1
    assert check_hist(h.as_record()) is None
    assert hist_percentile_range(h, 90.0) == (float(top), float(3 * top))  # rank 9
    assert hist_percentile_range(h, 50.0) == (20.0, 20.0)  # below 32: width 1
    past = Histogram(BOARD_LAYOUT, [(528, 10)], n=10, min=top, max=top, sum=0)
    problem = check_hist(past.as_record())
    assert problem is not None and "beyond the layout's 528 buckets" in str(problem)
    # Without `buckets`, the same index is within what a 64-bit value reaches.
    whole = Histogram({"kind": "log2", "sub_bits": 4}, [(528, 10)], n=10, min=top, max=top, sum=0)
    assert check_hist(whole.as_record()) is None
