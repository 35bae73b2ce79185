"""Known answers for RSP-IO, input edge to output edge.

The stimulator (rtb-stim) times every edge; the agent only answers. A delay
D injected into the agent's response path (test build, --inject
line_delay) must move every sample by at least D and the median by about D;
an agent told not to answer (line_mute) must give lost edges and no sample
at all, never a zero; a stimulator whose clock reads ahead (stim_skew) must
fail the clock check that a plain run passes; each software line answers
every edge. No absolute time is asserted: only the known D, counts, and
comparisons between runs of the same build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtbench.model import CaseResult, Check

D = 20_000_000  # ns: far above an answer's latency even on a busy machine, still a quick test
LINES = {0: "eventfd", 1: "pipe", 2: "pty"}
SCENARIOS = "abcde"
# A generous timeout: a lost edge in these tests must mean "no answer", never
# "a slow machine" (the mute test sets its own short one).
SLOW_OK = "timeout_ms=20000"


def case_of(result: Any, case_id: str = "RSP-IO") -> CaseResult:
    case: CaseResult | None = result.run.case(case_id)
    assert case is not None, result.stderr
    return case


def checks(case: CaseResult) -> dict[str, Check]:
    return {c.name: c for c in case.checks}


def edge_samples(case: CaseResult, edge: str, scenario: str, line: str) -> np.ndarray:
    s = case.find(edge, {"scenario": scenario, "line": line})
    assert s is not None, (edge, scenario, line)
    if s.n == 0:
        return np.zeros(0)
    assert s.samples is not None and len(s.samples) == s.n, (edge, scenario, line)
    return np.asarray(s.samples)


def counts(detail: str) -> tuple[int, int, int]:
    m = re.search(r"(\d+) edges, (\d+) answered .*?, (\d+) lost", detail)
    assert m, detail
    sent, answered, lost = (int(x) for x in m.groups())
    return sent, answered, lost


@pytest.mark.parametrize("line", sorted(LINES))
def test_each_software_line_answers_every_edge(
    test_agent: Path, run_agent: Callable[..., Any], line: int
) -> None:
    # The pty's answers pass through a kernel worker at normal priority,
    # which a real-time polling loop may starve: the handler scenario (e)
    # leaves it the CPU; a and e for the others.
    scen = "4" if line == 2 else "0,4"
    r = run_agent(test_agent, [f"RSP-IO:line={line}:scenario={scen}:count=40:{SLOW_OK}"])
    case = case_of(r)
    got = checks(case)
    name = LINES[line]
    assert case.outcome == "passed", got
    assert got["same_clock"].verdict == "pass"
    assert f"over a {name} line" in got["stimulator"].detail
    for idx in scen.split(","):
        s = SCENARIOS[int(idx)]
        sent, answered, lost = counts(got[f"{s}_{name}_edges"].detail)
        assert (sent, answered, lost) == (40, 40, 0)
        rising = edge_samples(case, "rising", s, name)
        falling = edge_samples(case, "falling", s, name)
        assert len(rising) == len(falling) == 20  # rising and falling alternate
        assert (rising > 0).all() and (falling > 0).all()


@pytest.mark.realtime
def test_injected_delay_moves_every_sample(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    args = f"RSP-IO:line=1:count=20:{SLOW_OK}"
    plain = case_of(run_agent(test_agent, [args]))
    slow = case_of(run_agent(test_agent, ["--inject", f"line_delay={D}", args]))
    assert plain.outcome == slow.outcome == "passed"
    for s in SCENARIOS:
        for edge in ("rising", "falling"):
            p = edge_samples(plain, edge, s, "pipe")
            v = edge_samples(slow, edge, s, "pipe")
            assert len(v) == len(p) == 10
            # The delay sits between seeing the edge and answering it...
            assert v.min() >= D, (s, edge)
            # ...and the plain run does not have it: the negative control.
            assert np.median(p) < D, (s, edge)
            # The median moves by about D, not by much more.
            assert np.median(v) - np.median(p) < 3 * D, (s, edge)


def test_no_answer_is_lost_never_a_zero(test_agent: Path, run_agent: Callable[..., Any]) -> None:
    r = run_agent(
        test_agent,
        ["--inject", "line_mute=1", "RSP-IO:line=1:scenario=0,4:count=6:timeout_ms=20"],
    )
    case = case_of(r)
    got = checks(case)
    assert case.outcome == "failed" and r.code == 1
    for s in "ae":
        check = got[f"{s}_pipe_edges"]
        assert check.verdict == "fail"
        assert counts(check.detail) == (6, 0, 6)
        assert "rising 3, falling 3" in check.detail.split("lost", 1)[1]
        for edge in ("rising", "falling"):
            assert len(edge_samples(case, edge, s, "pipe")) == 0


def test_clock_check_fails_on_a_skewed_stimulator(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    args = "RSP-IO:line=1:scenario=4:count=4"
    plain = checks(case_of(run_agent(test_agent, [args])))
    assert plain["same_clock"].verdict == "pass"
    # One second ahead: no ping's round trip is that long.
    skewed = checks(case_of(run_agent(test_agent, ["--inject", "stim_skew=1000000000", args])))
    assert skewed["same_clock"].verdict == "fail"
    assert re.search(r"(\d+) of 16 outside", skewed["same_clock"].detail)
    assert "0 of 16 outside" not in skewed["same_clock"].detail


def test_missing_stimulator_is_skipped_with_the_reason(
    test_agent: Path, run_agent: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RTB_STIM", str(tmp_path / "no-such-stim"))
    case = case_of(run_agent(test_agent, ["RSP-IO:line=1:scenario=0:count=2"]))
    assert case.outcome == "skipped"
    assert "no stimulator program" in checks(case)["stimulator"].detail


# ---- GPIO through a gpio-sim chip -------------------------------------------

CONFIGFS = Path("/sys/kernel/config")
GPIO_SIM = CONFIGFS / "gpio-sim"


def gpio_sim_unavailable() -> str:
    """Why no gpio-sim chip can be made here ('' when one can)."""
    if os.geteuid() != 0:
        return "needs root (configfs)"
    if not GPIO_SIM.is_dir() and shutil.which("modprobe"):
        subprocess.run(["modprobe", "gpio-sim"], capture_output=True, check=False, timeout=60)
    if not CONFIGFS.is_dir():
        return "no configfs at /sys/kernel/config (kernel without CONFIG_CONFIGFS_FS)"
    if not os.path.ismount(CONFIGFS):
        subprocess.run(["mount", "-t", "configfs", "none", str(CONFIGFS)], check=False)
    if not GPIO_SIM.is_dir():
        how = "no modprobe here" if not shutil.which("modprobe") else "modprobe gpio-sim failed"
        return f"no gpio-sim in this kernel ({how}; /sys/kernel/config/gpio-sim absent)"
    return ""


@pytest.fixture
def gpio_sim_chip() -> Iterator[str]:
    """A live gpio-sim chip with two lines: its /dev name (gpiochipN)."""
    why = gpio_sim_unavailable()
    if why:
        pytest.skip(f"GPIO: {why}; the software lines are tested instead")
    dev = GPIO_SIM / f"rtbench-{os.getpid()}"
    bank = dev / "gpio-bank0"
    bank.mkdir(parents=True)
    try:
        (bank / "num_lines").write_text("2")
        (dev / "live").write_text("1")
        yield (bank / "chip_name").read_text().strip()
    finally:
        if (dev / "live").exists():
            (dev / "live").write_text("0")
        bank.rmdir()
        dev.rmdir()


def test_gpio_sim_full_uapi_path(
    test_agent: Path, run_agent: Callable[..., Any], gpio_sim_chip: str
) -> None:
    n = int(gpio_sim_chip.removeprefix("gpiochip"))
    gpio = f"gpio_chip={n}:gpio_in=0:gpio_out=1:gpio_drive=0:gpio_sense=1"
    r = run_agent(test_agent, [f"RSP-IO:line=3:scenario=0,4:count=20:{gpio}:{SLOW_OK}"])
    case = case_of(r)
    got = checks(case)
    assert case.outcome == "passed", got
    for s in "ae":
        assert counts(got[f"{s}_gpio_edges"].detail) == (20, 20, 0)
        for edge in ("rising", "falling"):
            assert (edge_samples(case, edge, s, "gpio") > 0).all()
    # And the negative control on the same chip: an agent that never answers.
    r = run_agent(
        test_agent,
        ["--inject", "line_mute=1", f"RSP-IO:line=3:scenario=4:count=4:{gpio}:timeout_ms=50"],
    )
    assert counts(checks(case_of(r))["e_gpio_edges"].detail) == (4, 0, 4)


def test_gpio_absent_is_skipped_with_the_reason(
    test_agent: Path, run_agent: Callable[..., Any]
) -> None:
    r = run_agent(test_agent, ["RSP-IO:line=3:gpio_chip=250:scenario=0:count=2"])
    case = case_of(r)
    assert case.outcome == "skipped"
    assert "no GPIO chip at /dev/gpiochip250" in checks(case)["gpio_line"].detail
