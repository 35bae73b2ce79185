"""The stamps of measured windows (agent/core/stamp.c): the port's raw
counter, converted to ns after the window. Known answers: a window of a
known number of ticks converts exactly, and a counter that is not
invariant is not used, with the reason in the hello record."""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# (hz, ticks): a calibrated TSC rate, the board's 25 MHz timer, arm64's
# usual 24 MHz and 1 GHz timers; whole seconds, a tick short of one,
# single ticks, an hour, negatives (cross-CPU skew), and near the top.
CASES = {
    2_445_407_068: [2_445_407_068 * 3, 2_445_407_067, 1, 0, -2_445_407_068, 2**62],
    25_000_000: [1, 25, 25_000_000 * 3600, -3],
    24_000_000: [24_000_000, 7, 2**57],
    1_000_000_000: [123_456_789, -5, 2**62],
}


def _exact_ns(ticks: int, hz: int) -> int:
    q = abs(ticks) * 10**9 // hz
    return -q if ticks < 0 else q


@pytest.mark.parametrize("hz", sorted(CASES))
def test_known_tick_counts_convert_exactly(test_agent: Path, hz: int) -> None:
    exe = test_agent.parent / "rtbench-stamp-check"
    ticks = CASES[hz]
    out = subprocess.run(
        [str(exe), str(hz), *map(str, ticks)], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    for t, line in zip(ticks, out, strict=False):
        got_t, ns, back = map(int, line.split())
        assert got_t == t
        assert ns == _exact_ns(t, hz), (hz, t)
        # and back: the whole ticks within those ns (a threshold in ticks)
        assert back == (-1 if ns < 0 else 1) * (abs(ns) * hz // 10**9)
    assert ns == _exact_ns(ticks[-1], hz)  # every line was read


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def test_hello_says_what_stamps_the_windows(agent: Path, run_agent: Callable[..., Any]) -> None:
    clock = run_agent(agent, ["CAL-REF:repeats=10"]).run.hello["clock"]
    stamp = clock["stamp"]
    assert stamp["reason"]
    if platform.machine() in ("x86_64", "i686"):
        invariant = {"constant_tsc", "nonstop_tsc"} <= _cpu_flags()
        cs = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        trusted = not cs.exists() or cs.read_text().strip() == "tsc"
        assert (stamp["source"] == "rdtsc") == (invariant and trusted), stamp
    if stamp["source"] == clock["cycles"].get("source"):
        assert stamp["hz"] == clock["cycles"]["hz"]
    else:
        assert stamp["source"] == clock["source"] and stamp["hz"] == 10**9


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the TSC's flags are x86's")
def test_a_tsc_that_is_not_invariant_falls_back_and_says_so(
    test_agent: Path, run_agent: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "cpuinfo"
    # constant rate, but it stops in deep C-states: not fit for windows
    fake.write_text("processor\t: 0\nflags\t\t: fpu tsc constant_tsc rdtscp\n\n")
    monkeypatch.setenv("RTB_TEST_CPUINFO", str(fake))
    r = run_agent(test_agent, ["CAL-REF:repeats=10", "SEM-ARN:iterations=200"])
    stamp = r.run.hello["clock"]["stamp"]
    assert stamp["source"].startswith("clock_gettime") and stamp["hz"] == 10**9
    assert "nonstop_tsc" in stamp["reason"] and "constant_tsc" not in stamp["reason"]
    # the cases still measure, in ns, on the fallback
    for case in r.run.cases:
        assert case.outcome == "passed", (case.case, case.reason)
    fake.write_text("flags\t\t: fpu tsc constant_tsc nonstop_tsc\n")
    clocksource = tmp_path / "current_clocksource"
    clocksource.write_text("tsc\n")
    monkeypatch.setenv("RTB_TEST_CLOCKSOURCE", str(clocksource))
    stamp = run_agent(test_agent, ["CAL-REF:repeats=10"]).run.hello["clock"]["stamp"]
    assert stamp["source"] == "rdtsc" and "invariant" in stamp["reason"]
    # invariant, but the kernel did not trust it across CPUs: the clock
    clocksource.write_text("hpet\n")
    stamp = run_agent(test_agent, ["CAL-REF:repeats=10"]).run.hello["clock"]["stamp"]
    assert stamp["source"].startswith("clock_gettime") and "hpet" in stamp["reason"]


D = 200_000  # ns: op_delay busy-waits this long inside each timed call


@pytest.mark.parametrize("counter", ["tsc", "fallback"])
def test_a_known_delay_reads_in_ns_whatever_stamps_it(
    test_agent: Path,
    run_agent: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    counter: str,
) -> None:
    """Ticks left unconverted would read 2-3x the delay at a GHz counter."""
    if counter == "fallback":
        fake = tmp_path / "cpuinfo"
        fake.write_text("flags\t\t: fpu tsc\n")
        monkeypatch.setenv("RTB_TEST_CPUINFO", str(fake))
    r = run_agent(test_agent, ["--inject", f"op_delay={D}", "SEM-ARN:iterations=30"])
    stamp = r.run.hello["clock"]["stamp"]
    if counter == "fallback":
        assert stamp["hz"] == 10**9
    case = r.run.case("SEM-ARN")
    assert case is not None, r.stderr
    give = case.find("give")
    assert give is not None and give.min is not None
    assert D <= give.min < 2 * D, (stamp, give.min)
