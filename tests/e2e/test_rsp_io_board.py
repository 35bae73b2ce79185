"""RSP-IO on QEMU's mps2-an385 board, for every kernel on it: the same case
file as on Linux, the board supplying the line (boards/common/line.c). The
input edges are emulated: the dual timer fires at pseudo-random moments
known on the timestamp counter; the output is a write to the FPGA IO LED
register, stamped on the same counter.

Known answers that can fail: a delay injected into the response path moves
every sample by it; with the answer disabled every edge is lost and no
sample is made; the generator's claimed edge moments are checked against
the counter (a skew injected into them fails the check); two -icount runs
give the same figures.
"""

from __future__ import annotations

import numpy as np
import pytest
import tools
from boards import measure_board

from rtbench import identity
from rtbench.machine.build import Flavor
from rtbench.model import CaseResult

BOARD = "mps2-an385"
PORTS = ["freertos", "ucos3", "ucos2"]
SCENARIOS = "abcde"
TICK_NS = 40  # the timestamp counter's tick (25 MHz)

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")


def _run(port: str, args: list[str], flavor: Flavor = "release") -> CaseResult:
    tools.firmware(port, BOARD, flavor)
    query = "?flavor=test" if flavor == "test" else ""
    run, _ = measure_board(f"qemu:{port}-{BOARD}{query}", args)
    (case,) = run.cases
    assert case.case == "RSP-IO"
    return case


def _series(case: CaseResult) -> dict[tuple[str, str], np.ndarray]:
    out = {}
    for s in case.series:
        assert s.point["line"] == "timer"
        assert s.samples is not None and s.holes == 0, s.name
        out[(str(s.point["scenario"]), s.name)] = np.asarray(s.samples)
    return out


@pytest.mark.parametrize("port", PORTS)
def test_every_kernel_answers_the_boards_edges(port: str) -> None:
    case = _run(port, ["RSP-IO:count=20"])
    verdict = {k.name: k for k in case.checks}
    assert case.outcome == "passed", [(k.name, k.verdict, k.detail) for k in case.checks]
    assert "emulated edges" in verdict["stimulator"].detail
    assert verdict["same_clock"].verdict == "pass"
    # uC/OS-II: one task per priority; b and c put a task beside the loop.
    skipped = set("bc") if port == "ucos2" else set()
    for s in SCENARIOS:
        check = verdict[f"{s}_timer_edges"]
        if s in skipped:
            assert check.verdict == "skip" and "one task per priority" in check.detail
        else:
            assert check.verdict == "pass", check.detail
            assert "20 edges, 20 answered (rising 10, falling 10), 0 lost" in check.detail
    series = _series(case)
    assert {sc for sc, _ in series} == set(SCENARIOS) - skipped
    for key, v in series.items():
        assert len(v) == 10 and (v > 0).all(), (key, v)


def test_a_delay_in_the_response_path_moves_every_sample() -> None:
    """The injected busy-wait ends on the first clock read at or past its
    end. The handler alone (e) answers every edge by one path: each of its
    samples moves by the delay plus that loop's own cost (but for the few
    the kernel's tick hits). The
    polling loop (a) answers at its phase in the yield loop, which the
    delay changes: its fastest answer and its median move by the delay."""
    delay = 20_000
    args = ["RSP-IO:scenario=0,4:count=40"]
    plain = _series(_run("freertos", args, "test"))
    slow = _series(_run("freertos", ["--inject", f"line_delay={delay}", *args], "test"))
    assert plain.keys() == slow.keys() and len(plain) == 4
    for key, v in plain.items():
        w = slow[key]
        assert w.min() >= v.min() + delay - 2 * TICK_NS, (key, v, w)
        # Plus the injection's own cost (its clock reads, about 1 us).
        spread = int(v.max() - v.min())
        moved = np.median(w) - np.median(v)
        assert delay - spread <= moved < delay + spread + 2_000, (key, v, w)
        if key[0] == "e":
            shift = w - v
            # Plus the injection's own cost (its clock reads, about 1 us a
            # turn); the kernel's 1 kHz tick lands on other edges once
            # the timeline moved, so a few pairs differ by its handler.
            typical = np.median(shift)
            assert delay <= typical < delay + 2_000, (key, shift)
            assert (abs(shift - typical) <= 2 * TICK_NS).mean() >= 0.8, (key, shift)


def test_no_answer_loses_every_edge_and_makes_no_sample() -> None:
    case = _run(
        "freertos",
        ["--inject", "line_mute=1", "RSP-IO:scenario=0,4:count=6:timeout_ms=5"],
        "test",
    )
    assert case.outcome == "failed"
    verdict = {k.name: k for k in case.checks}
    for s in "ae":
        check = verdict[f"{s}_timer_edges"]
        assert check.verdict == "fail"
        assert "6 edges, 0 answered (rising 0, falling 0), 6 lost" in check.detail, check.detail
    assert all(s.n == 0 for s in case.series)


def test_the_generators_moments_are_checked_against_the_counter() -> None:
    """The same_clock check polls the generator's edges on the counter, a
    stamp before and after each read of its raw status; moments claimed
    later than the widest such bracket (one turn of the poll, a few
    hundred instructions at most) lie outside every bracket."""
    case = _run("freertos", ["--inject", "stim_skew=10000", "RSP-IO:scenario=0:count=4"], "test")
    clock = next(k for k in case.checks if k.name == "same_clock")
    assert clock.verdict == "fail" and "16 of 16 outside" in clock.detail, clock.detail


@pytest.mark.parametrize("port", PORTS)
def test_icount_gives_the_same_samples_twice(port: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identity, "new", lambda: "00000000-0000-4000-8000-000000000000")
    args = ["RSP-IO:scenario=0,3,4:count=10"]
    first, second = _series(_run(port, args)), _series(_run(port, args))
    assert first.keys() == second.keys() and len(first) == 6
    for key, v in first.items():
        assert np.array_equal(v, second[key]), key
