"""Known answers for the CLK and JIT cases (test build of the agent).

CLK-DUR must find a recurring gap that a higher-priority thread injects at
a known period and length; JIT-PER must show a known blocking time on the
very releases a higher-priority blocker holds up; CLK-RES must never see a
sleep end early, and must see it when the case is made to ask for one. No
absolute time is asserted: only injected amounts (which a busy-wait
guarantees), counts that add up and comparisons within one test."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from rtbench.model import CaseResult, Check, Point, Series

Runner = Callable[..., Any]  # conftest's run_agent -> AgentResult
Samples = npt.NDArray[np.int64]

# The other test files measure on the default CPU (the last); these cases
# take a CPU for up to a second at the top case priority, so they measure
# on the first one the tests may use instead and neither disturbs the
# other's figures.
CPU = ["--cpu", str(min(os.sched_getaffinity(0)))]


def case_of(result: Any, case_id: str) -> CaseResult:
    c = result.run.case(case_id)
    assert isinstance(c, CaseResult), result.stderr
    return c


def series(c: CaseResult, name: str, point: Point | None = None) -> Series:
    s = c.find(name, point)
    assert s is not None and s.samples is not None, (c.case, name, point)
    return s


def samples(c: CaseResult, name: str, point: Point | None = None) -> Samples:
    v = series(c, name, point).samples
    assert v is not None
    return v


def median(v: Samples) -> float:
    return float(np.median(v.astype(np.float64)))


def check(c: CaseResult, name: str) -> Check:
    found = [x for x in c.checks if x.name == name]
    assert len(found) == 1, (name, c.checks)
    return found[0]


# ---- CLK-DUR ---------------------------------------------------------------

INJ_PERIOD = 4_700_000  # ns: no common tick period, nor a multiple of one
INJ_LEN = 300_000  # ns: far above a tick's processing, far below the period


def recurring_sources(c: CaseResult) -> list[tuple[float, Samples]]:
    """(period, gap lengths) of every recurring source the case reported."""
    out = []
    period = c.find("tick_period")
    if period is not None and period.min is not None:
        out.append((float(period.min), samples(c, "tick")))
    for s in c.series:
        if s.name == "recurring":
            # The measured period is an attribute; the rank is the key.
            assert set(s.point) == {"rank"} and s.kind == "latency", s
            out.append((float(s.attrs["period_ns"]), samples(c, "recurring", s.point)))
    return out


# The injector must preempt the spinning thread at its period: SCHED_FIFO.
@pytest.mark.realtime
def test_clk_dur_finds_an_injected_recurring_gap(test_agent: Path, run_agent: Runner) -> None:
    inject = f"inject_period_us={INJ_PERIOD // 1000}:inject_us={INJ_LEN // 1000}"
    args = f"CLK-DUR:duration_ms=400:{inject}"
    base = case_of(run_agent(test_agent, [*CPU, "CLK-DUR:duration_ms=400"]), "CLK-DUR")
    inj = case_of(run_agent(test_agent, [*CPU, args]), "CLK-DUR")
    for c in (base, inj):
        gaps, starts = samples(c, "gap"), samples(c, "gap_start")
        assert len(gaps) == len(starts) and np.all(np.diff(starts) > 0)
        # Every gap is either the tick's or another's: the counts add up
        # (no tick found, on a noisy machine or a tickless CPU: all other).
        tick, other, stall = c.find("tick"), c.find("other"), c.find("stall")
        assert tick is not None and other is not None and stall is not None
        assert tick.n + other.n + stall.n == len(gaps)
        assert gaps.min() > 0
    # Every injected hold is captured as a gap of at least its length, and
    # those gaps recur at its period (whole multiples of it between them).
    expected = 400e6 / INJ_PERIOD
    gaps, starts = samples(inj, "gap"), samples(inj, "gap_start")
    held = starts[gaps >= INJ_LEN]
    assert len(held) >= 0.5 * expected, (len(held), expected)
    # The injector's own wake-up is late by the machine's latency (up to ms
    # under load) and a loaded machine adds gaps of its own: the bounds
    # leave room for both (a tenth of a period, half the steps), so only a
    # gap that does not recur at the period fails them.
    steps = np.diff(held) / INJ_PERIOD
    assert np.mean(np.abs(steps - np.round(steps)) < 0.1) >= 0.5, steps
    # Where the detector names the source (on a quiet machine it does; a
    # busy one's own recurring gaps may outvote it), it is made of them.
    hits = [(p, g) for p, g in recurring_sources(inj) if abs(p / INJ_PERIOD - 1) < 0.01]
    assert len(hits) <= 1, recurring_sources(inj)
    for _, lengths in hits:
        assert median(lengths) >= INJ_LEN  # at least half of them held that long
    # Without the injection nothing of that size recurs at that period.
    assert not [
        p
        for p, g in recurring_sources(base)
        if abs(p / INJ_PERIOD - 1) < 0.01 and median(g) >= INJ_LEN
    ]


STALL = 20_000_000  # ns: twenty 1 ms ticks, five 4 ms ones


@pytest.mark.realtime  # without it other threads' slices are gaps too: no tick, no stall apart
def test_clk_dur_reports_a_stall_apart_from_the_tick(test_agent: Path, run_agent: Runner) -> None:
    """Issue 20: the measuring thread blocked 20 ms (a test-build fault, the
    shape of an RT-throttling stop) is a stall with a warning, never a tick:
    before, a 48.8 ms throttle stop was the tick's max and moved its mean."""
    r = run_agent(test_agent, [*CPU, "--inject", f"stall={STALL}", "CLK-DUR:duration_ms=400"])
    c = case_of(r, "CLK-DUR")
    gaps, starts = samples(c, "gap"), samples(c, "gap_start")
    tick, other = c.find("tick"), c.find("other")
    assert tick is not None and other is not None
    period = c.find("tick_period")
    if period is None or period.max is None:
        # No tick found (CI once: 1,414 gaps in 400 ms, said in a warning):
        # nothing to hold a stall against, so the block stays a gap, never a tick.
        assert tick.n == 0 and gaps.max() >= STALL
        assert any(w.code == "no_tick" for w in c.warnings), c.warnings
        return
    stall, stall_start = samples(c, "stall"), samples(c, "stall_start")
    assert tick.n + other.n + len(stall) == len(gaps)
    # The block is one of the stalls, at the gap where it happened.
    assert stall.max() >= STALL
    at = int(np.argmax(gaps))
    assert gaps[at] == stall.max() and starts[at] in stall_start
    assert series(c, "stall").kind == "duration"  # time lost, not an OS path's cost
    warned = [w for w in c.warnings if w.code == "stall"]
    assert len(warned) == 1 and "not ticks" in warned[0].detail, c.warnings
    # Nothing in `tick` or `other` is as long as the tick period.
    assert tick.max is not None and tick.max < period.max
    assert other.max is None or other.max < period.max


# ---- CLK-RES ---------------------------------------------------------------


def test_clk_res_never_wakes_early(test_agent: Path, run_agent: Runner) -> None:
    c = case_of(run_agent(test_agent, [*CPU, "CLK-RES:count=100"]), "CLK-RES")
    assert check(c, "no_early").verdict == "pass" and c.outcome == "passed"
    req = [int(v) for v in c.params["request_ns"]]
    over = {d: samples(c, "overshoot", {"request_ns": d}) for d in req}
    for d in req:
        assert len(over[d]) == 100
        assert over[d].min() >= 0  # a sleep cannot end before its time
    # The overshoot is the timer's granularity, not a share of the request:
    # from the shortest to the longest request it grows less than the request.
    lo, hi = min(req), max(req)
    assert median(over[hi]) - median(over[lo]) < hi - lo


def test_clk_res_sees_an_early_wake(test_agent: Path, run_agent: Runner) -> None:
    # Most of the request: a busy machine's overshoot is under 900 us at
    # least once in 50 sleeps, so a sleep ends before the request.
    early = 900_000
    args = "CLK-RES:count=50:request_ns=1000000"
    r = run_agent(test_agent, [*CPU, f"{args}:early_ns={early}"])
    c = case_of(r, "CLK-RES")
    assert check(c, "no_early").verdict == "fail"
    assert c.outcome == "failed" and r.code == 1
    bad = samples(c, "overshoot")
    assert len(bad) == 50
    # Asked to wake `early` before the request, a sleep ends before the
    # request, but never before what the OS was really asked for. (Two
    # runs' medians are not compared: a busy machine moves them.)
    assert bad.min() < 0
    assert bad.min() >= -early


# ---- JIT-PER ---------------------------------------------------------------

PERIOD = 5_000  # µs
BLOCK = 6_000  # µs: longer than a period, so every blocked release overruns


def test_jit_per_counts_add_up(test_agent: Path, run_agent: Runner) -> None:
    periods, cap = 300, 50
    case = f"JIT-PER:period_us=1000:cycles={periods}:load_threads=1"
    r = run_agent(test_agent, [*CPU, "--max-samples", str(cap), case])
    c = case_of(r, "JIT-PER")
    assert check(c, "load_ran").verdict == "pass"
    detail = check(c, "releases").detail
    m = re.match(r"(\d+) releases in (\d+) periods", detail)
    assert m is not None, detail
    released = int(m[1])
    assert int(m[2]) == periods
    # Overruns skip the periods they ran into: releases + skipped = periods.
    # (a late first release, a warm-up, says so under its own code)
    over = [w for w in c.warnings if w.code in ("overrun", "warmup")]
    skipped = 0
    if over:
        found = re.search(r"(\d+) periods skipped", over[0].detail)
        assert found is not None, over[0].detail
        skipped = int(found[1])
    assert released + skipped == periods
    lat, iv, dev = series(c, "latency"), series(c, "interval"), series(c, "deviation")
    # Raw samples stop at the cap; the histograms keep counting.
    assert (lat.n, iv.n, dev.n) == (released, released - 1, released - 1)
    # (a loaded machine's overruns may leave fewer releases than the cap)
    kept = min(cap, released)
    assert len(samples(c, "latency")) == kept and lat.dropped == released - kept
    assert lat.min is not None and lat.min >= 0
    # POSIX timers end at any instant: the latency's reference is the plan.
    assert lat.attrs == {"release_grain_ns": 0} and iv.attrs == {}
    # deviation = interval - period, truncated toward zero to whole µs.
    expect = np.trunc((samples(c, "interval") - 1_000_000) / 1000) * 1000
    assert np.array_equal(samples(c, "deviation"), expect.astype(np.int64))
    h = dev.hist
    assert h is not None
    assert h.layout == {"kind": "linear", "lo": -1023000, "width": 1000, "buckets": 2047}
    assert sum(n for _, n in h.counts) + h.underflow + h.overflow == released - 1
    # The study's table, exactly from the buckets, matches the target's tally.
    table = [0, 0, 0, h.underflow + h.overflow]
    shorter, equal, longer = h.underflow, 0, h.overflow
    for i, n in h.counts:
        us = h.bucket_bounds(i)[0] // 1000
        table[0 if us == 0 else 1 if abs(us) < 10 else 2 if abs(us) < 100 else 3] += n
        shorter += n if us < 0 else 0
        equal += n if us == 0 else 0
        longer += n if us > 0 else 0
    assert f"{shorter} shorter, {equal} equal, {longer} longer" in detail
    assert (
        f"0 us: {table[0]}, 1-9 us: {table[1]}, 10-99 us: {table[2]}, >= 100 us: {table[3]}"
        in detail
    )


@pytest.mark.realtime  # the blocker must preempt the periodic task
def test_jit_per_shows_a_known_blocking_time(test_agent: Path, run_agent: Runner) -> None:
    args = f"JIT-PER:period_us={PERIOD}:cycles=200:load_threads=0"
    blocked = run_agent(test_agent, [*CPU, f"{args}:blocker_us={BLOCK}:blocker_count=4"])
    c = case_of(blocked, "JIT-PER")
    lat = samples(c, "latency")
    chk = check(c, "blocker")
    assert chk.verdict == "pass", chk.detail
    at = [int(m) for m in re.findall(r"release (\d+): ", chk.detail)]
    # The blocker holds 4 slots; one whose release the schedule had already
    # skipped (the release before it later than a period: a 5 ms stall,
    # which a loaded machine gives) serves no release and is not listed.
    # Seen under stress-ng: releases 6, 67, 144 of 4 slots.
    assert 1 <= len(at) <= 4, chk.detail
    assert chk.detail.startswith(f"{len(at)} releases held up"), chk.detail
    # The very releases the blocker held up waited at least the block...
    assert all(lat[k] >= BLOCK * 1000 for k in at)
    assert lat.max() >= BLOCK * 1000
    # ...and, a block being longer than the period, each is an overrun.
    over = [w for w in c.warnings if w.code == "overrun"]
    assert over and int(over[0].detail.split(" of ")[0]) >= len(at)
    # Without the blocker the same releases are ordinary ones.
    base = samples(case_of(run_agent(test_agent, [*CPU, args]), "JIT-PER"), "latency")
    assert sum(base[k] >= BLOCK * 1000 for k in at if k < len(base)) < len(at) / 2
