"""Known answers for the IRQ family (IRQ-LAT, IRQ-RSP, IRQ-DLT, IRQ-TLT,
IRQ-SUS). A higher-priority thread that holds the CPU for a known D across
chosen events must show as a latency of at least D; a delay injected into
the handler's semaphore give shows in every interrupt-to-thread sample; a
woken thread that is not the highest fails the priority check; a timer
period below what the machine sustains loses events. No absolute time is
asserted: only the known D and comparisons within one run."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from rtbench.model import CaseResult, Check

D = 1_000_000  # ns: far above an event's latency here, well below a test's patience

SOURCES = {0: "timer", 1: "raised"}


def case_of(result: Any, case_id: str) -> CaseResult:
    case: CaseResult | None = result.run.case(case_id)
    assert case is not None, result.stderr
    return case


def samples(case: CaseResult, series: str) -> np.ndarray:
    s = case.find(series)
    assert s is not None and s.samples is not None and len(s.samples) > 0, (case.case, series)
    return np.asarray(s.samples)


def checks(case: CaseResult) -> dict[str, Check]:
    return {c.name: c for c in case.checks}


def need_cpus(source: int) -> None:
    if source == 1 and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the raised source's blocker raises from a second CPU")


def held(detail: str) -> int:
    m = re.search(r"blocker held (\d+) events", detail)
    assert m, detail
    return int(m.group(1))


# ---- IRQ-LAT ---------------------------------------------------------------


def test_lat_records_source_and_counts_add_up(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(test_agent, ["IRQ-LAT:count=500:period_us=500"])
    case = case_of(r, "IRQ-LAT")
    got = checks(case)
    assert case.outcome == "passed" and r.code == 0
    assert "POSIX timer" in got["timer_delivery"].detail
    assert "tgkill" in got["raised_delivery"].detail
    for name in SOURCES.values():
        detail = got[f"{name}_delivery"].detail
        events, handled, overruns, missing, bad = (
            int(x) for x in re.findall(r"(\d+) (?:events|handled|lost|handler runs)", detail)
        )
        assert events == 500 and missing == 0 and bad == 0
        assert handled + overruns == events  # every event handled or counted as lost
        assert len(samples(case, f"{name}_latency")) == handled
    assert (samples(case, "raised_latency") > 0).all()


@pytest.mark.realtime
@pytest.mark.parametrize("source", [0, 1])
def test_lat_blocker_shows_in_the_max(
    test_agent: Path, run_agent: Callable[..., Any], source: int
) -> None:
    need_cpus(source)
    args = f"IRQ-LAT:source={source}:count=150:period_us=2000"
    r = run_agent(test_agent, [f"{args}:blocker_us={D // 1000}"])
    case = case_of(r, "IRQ-LAT")
    name = SOURCES[source]
    assert held(checks(case)[f"{name}_delivery"].detail) > 0
    v = samples(case, f"{name}_latency")
    # An event the blocker held cannot reach its handler before D...
    assert v.max() >= D
    # ...and the blocker, not the machine, made it: most events are not held.
    assert np.median(v) < D


# ---- IRQ-RSP ---------------------------------------------------------------


@pytest.mark.realtime
def test_rsp_runs_under_load_and_sees_the_blocker(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(
        test_agent, [f"IRQ-RSP:count=150:period_us=2000:load_threads=2:blocker_us={D // 1000}"]
    )
    case = case_of(r, "IRQ-RSP")
    got = checks(case)
    for source, name in SOURCES.items():
        if source == 1 and len(os.sched_getaffinity(0)) < 2:
            continue
        load = got[f"{name}_load"]
        assert load.verdict == "pass"
        assert int(cast("re.Match[str]", re.search(r"(\d+) calls", load.detail)).group(1)) > 0
        assert held(got[f"{name}_delivery"].detail) > 0
        v = samples(case, f"{name}_latency")
        assert v.max() >= D and np.median(v) < D


# ---- IRQ-DLT ---------------------------------------------------------------


@pytest.mark.realtime
def test_dlt_blocker_delays_the_resume(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    # The blocker must end before the next event, or that event's handler
    # runs before the resume: D / 2 against a 2 ms period.
    d = D // 2
    r = run_agent(test_agent, [f"IRQ-DLT:count=150:period_us=2000:blocker_us={d // 1000}"])
    case = case_of(r, "IRQ-DLT")
    for name in SOURCES.values():
        assert checks(case)[f"{name}_delivery"].verdict == "pass"
        v = samples(case, f"{name}_dispatch")
        assert v.max() >= d and np.median(v) < d
        assert (v > 0).all()  # the resume stamp is after the handler's last


# ---- IRQ-TLT ---------------------------------------------------------------


def test_tlt_injected_give_delay_shows_in_every_sample(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    d = 200_000
    args = "IRQ-TLT:count=150:period_us=2000"
    base = case_of(run_agent(test_agent, [args]), "IRQ-TLT")
    slow = case_of(run_agent(test_agent, ["--inject", f"give_delay={d}", args]), "IRQ-TLT")
    for name in SOURCES.values():
        b, s = samples(base, f"{name}_to_thread"), samples(slow, f"{name}_to_thread")
        # The handler stamps just before the give, so every sample holds it;
        # without the injection nothing forces a sample that long. (Two
        # runs' medians are not compared: a busy machine moves them.)
        assert s.min() >= d
        assert len(b) > 0 and len(s) > 0


@pytest.mark.realtime
def test_tlt_highest_first_passes_and_fails(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    good = run_agent(test_agent, ["IRQ-TLT:count=100:period_us=1000"])
    got = checks(case_of(good, "IRQ-TLT"))
    assert got["timer_highest_first"].verdict == "pass"
    assert got["raised_highest_first"].verdict == "pass"
    # A woken thread no higher than the interrupted one cannot run first.
    bad = run_agent(test_agent, ["IRQ-TLT:source=0:count=100:period_us=1000:waiter_prio=0"])
    case = case_of(bad, "IRQ-TLT")
    assert checks(case)["timer_highest_first"].verdict == "fail"
    assert case.outcome == "failed" and bad.code == 1


# ---- IRQ-SUS ---------------------------------------------------------------


# Without real-time priority IRQ-SUS is skipped (its losses would measure the
# scheduler's fairness): the search's known answers need SCHED_FIFO.
@pytest.mark.realtime
def test_sus_too_short_a_period_loses_events(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    count = 2000
    r = run_agent(
        test_agent,
        [f"IRQ-SUS:count={count}:start_period_ns=1000:min_period_ns=1000:duration_ms=4000"],
    )
    case = case_of(r, "IRQ-SUS")

    def one(name: str) -> dict[int, int]:  # period -> the one sample
        return {int(s.point["period_ns"]): s.max or 0 for s in case.series if s.name == name}

    losses, delivered = one("losses"), one("delivered")
    # No handler keeps up with a 1 us timer: the search must see the loss.
    assert losses[1000] > 0
    # Every event was either delivered or counted as lost: `count` of them,
    # or fewer in a try that widened the search to the end of its budget.
    assert losses.keys() == delivered.keys()
    check = checks(case)["sustained_period"]
    tried = re.findall(r"(\d+) ns: (\d+) lost( \(fewer events\))?", check.detail)
    assert {int(p) for p, _, _ in tried} == losses.keys()
    for p, lost, fewer in tried:
        assert losses[int(p)] == int(lost)
        total = losses[int(p)] + delivered[int(p)]
        assert total == count if not fewer else 100 <= total < count
    sustained = case.find("sustained_period")
    if sustained is not None:
        best = int(sustained.max or 0)
        assert best > 1000 and losses[best] == 0
        assert check.verdict == "pass" and case.outcome == "passed"
        assert all(losses[p] > 0 for p in losses if p < best)
    else:  # a noisy machine may lose events at every period it could try: a bound
        bound = case.find("lossy_period")
        assert bound is not None and int(bound.max or 0) == max(losses)
        assert check.verdict == "fail" and case.outcome == "failed" and r.code == 1
        assert all(v > 0 for v in losses.values())


@pytest.mark.realtime
def test_sus_slow_machine_is_a_bound_and_a_failed_check(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    """A fake slow machine: every event handler busy-waits 50 ms, longer than
    any period the search can reach in its budget. The result is a bound
    and a failed check (a finding), never an error."""
    r = run_agent(
        test_agent,
        [
            "--inject",
            "event_delay=50000000",
            "IRQ-SUS:count=100:start_period_ns=20000:duration_ms=1500",
        ],
    )
    case = case_of(r, "IRQ-SUS")
    check = checks(case)["sustained_period"]
    assert check.verdict == "fail", check.detail
    assert case.outcome == "failed" and r.code == 1 and r.run.bye is not None
    assert case.find("sustained_period") is None
    bound = case.find("lossy_period")
    assert bound is not None and bound.unit == "ns"
    widest = int(bound.max or 0)
    assert widest < 50_000_000  # every period tried is shorter than the stall
    m = re.search(r"no lossless period up to (\d+) us: the sustained rate is below", check.detail)
    assert m and int(m.group(1)) == widest // 1000, check.detail
    tried = {int(s.point["period_ns"]) for s in case.series if s.name == "losses"}
    assert max(tried) == widest and len(tried) >= 2  # it widened: doubled at least once


# ---- all -------------------------------------------------------------------


def test_every_case_releases_its_events(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    # The port has 8 event slots; these runs create 24 events one after the
    # other, so a case that kept one would make a later one fail to create.
    once = [
        "IRQ-LAT:count=20:period_us=200",
        "IRQ-DLT:count=20:period_us=200",
        "IRQ-TLT:count=20:period_us=200",
        "IRQ-RSP:count=20:period_us=200:load_threads=0",
    ]
    r = run_agent(test_agent, once * 3)
    ends = [line for line in r.stdout.splitlines() if b" end {" in line]
    assert len(ends) == 12 and all(b'"result":"error"' not in e for e in ends), r.stdout[-2000:]
    assert b"could not run" not in r.stdout
    assert r.code in (0, 1) and r.run.bye is not None
