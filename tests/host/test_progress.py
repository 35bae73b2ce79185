"""Run progress: the per-case estimate from the plan, a line per case with
an ETA when piped, and the ETA's scaling by how the finished cases went.
No wall-clock time is asserted: the clock is the test's."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rich.console import Console

from rtbench.reports import progress as prog
from rtbench.reports.progress import RunProgress, expected_s
from rtbench.run.suites import SUITES


@dataclass
class P:
    case: str
    params: dict[str, str] = field(default_factory=dict)


SWEEP = [{"name": "n", "default": [2, 5, 10, 128, 1000]}, {"name": "duration_ms", "default": [300]}]


def test_estimates_follow_the_plan() -> None:
    # duration per point times the sweep's points, the agent's defaults filling in
    assert expected_s({"duration_ms": "30000"}, SWEEP) == 5 * 30 + prog.OVERHEAD_S
    assert expected_s({"n": "2,10", "duration_ms": "1000"}, SWEEP) == 2 * 1 + prog.OVERHEAD_S
    assert expected_s({"cycles": "5000", "period_us": "10000"}) == 50 + prog.OVERHEAD_S
    assert expected_s({"count": "10000", "period_us": "1000"}) == 10 + prog.OVERHEAD_S
    assert expected_s({"iterations": "10000"}) == prog.FALLBACK_S
    # a count capped by a duration lasts the shorter; a 0 cap is none
    jit = {"cycles": "2000", "period_us": "1000", "duration_ms": "0"}
    assert expected_s(jit) == 2 + prog.OVERHEAD_S
    rsp = {"count": "20000", "period_us": "50", "duration_ms": "30000"}
    assert expected_s(rsp, [{"name": "source", "default": [0, 1]}]) == 2 * 1 + prog.OVERHEAD_S
    capped = {"cycles": "1000000", "period_us": "1000", "duration_ms": "6000"}
    assert expected_s(capped) == 6 + prog.OVERHEAD_S
    # the full suite is estimated far longer than the quick one
    full = sum(expected_s(p) for p in SUITES["full"].values())
    quick = sum(expected_s(p) for p in SUITES["quick"].values())
    assert full > 10 * quick


def test_piped_prints_a_line_per_case_with_an_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("rtbench.reports.progress.time.monotonic", lambda: now[0])
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False)
    plan = [P("A", {"duration_ms": "10000"}), P("B", {"duration_ms": "10000"}), P("C")]
    with RunProgress(plan, {}, console) as rp:
        assert rp.eta_s() == rp.total  # nothing finished: the plan's estimate
        rp.on_record("begin", {"case": "A"})
        now[0] += 2 * rp.estimates[0]  # A takes twice its estimate...
        rp.on_record("end", {"case": "A", "result": "passed"})
        # ...so what remains is expected to take twice its estimate too
        assert rp.eta_s() == pytest.approx(2 * (rp.estimates[1] + rp.estimates[2]))
        rp.on_record("begin", {"case": "B"})
        now[0] += 1
        rp.on_record("end", {"case": "B", "result": "failed"})
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("rtbench: 3 cases, about 0:2")
    assert lines[0].endswith("(from the plan); starting the agent")
    assert lines[1].startswith("[1/3] A passed in 20.6 s · elapsed 0:21 · ETA 0:2")
    assert lines[2].startswith("[2/3] B failed in 1.0 s")
    assert len(lines) == 3


def test_a_slow_start_is_said_and_counted_next_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A target that takes 30 s to answer (a QEMU boot): said when piped,
    remembered, and part of the next run's estimate; the cases' ETA is not
    scaled by it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    now = [100.0]
    monkeypatch.setattr("rtbench.reports.progress.time.monotonic", lambda: now[0])
    plan = [P("A", {"duration_ms": "10000"}), P("B", {"duration_ms": "10000"})]
    for first in (True, False):
        buf = io.StringIO()
        console = Console(file=buf, width=200, force_terminal=False)
        with RunProgress(plan, {}, console, target="qemu:x") as rp:
            now[0] += 30
            rp.on_record("hello", {})
            rp.on_record("begin", {"case": "A"})
            now[0] += rp.estimates[0]  # A takes its estimate: B is expected to as well
            rp.on_record("end", {"case": "A", "result": "passed"})
            assert rp.eta_s() == pytest.approx(rp.estimates[1])
        lines = buf.getvalue().splitlines()
        if first:
            assert lines[0].startswith("rtbench: 2 cases, about 0:21 (from the plan);")
        else:
            assert lines[0].startswith(
                "rtbench: 2 cases, about 0:51 (from the plan and qemu:x's last start-up, 30 s)"
            )
        assert lines[1] == "rtbench: the agent answered after 30.0 s (the target's start-up)"
    assert prog.last_startup_s("qemu:x") == 30.0
    assert prog.last_startup_s("qemu:y") is None
