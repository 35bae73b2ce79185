"""Known answers for JIT-DL (SCHED_DEADLINE releases): a job that needs
more than its runtime is throttled by the kernel and misses its deadline
(a failed timing check naming the misses), far more often than the same
task within its runtime; without the privilege to become a deadline task
the case is skipped with the OS's answer; a port without a deadline
scheduler says unsupported (the FreeRTOS board test covers it)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import drop_privileges, public_copy

from rtbench.model import CaseResult

Runner = Callable[..., Any]


def _case(result: Any) -> CaseResult:
    c = result.run.case("JIT-DL")
    assert isinstance(c, CaseResult), result.stderr
    return c


def _misses(c: CaseResult) -> float:
    check = next(ch for ch in c.checks if ch.name == "deadlines")
    missed, _, rest = check.detail.partition(" of ")
    jobs = int(rest.split()[0])
    assert jobs > 0
    return int(missed) / jobs


@pytest.mark.realtime
def test_overrun_jobs_miss_their_deadlines(run_agent: Runner, agent: Path) -> None:
    plain = _case(run_agent(agent, ["JIT-DL:cycles=300:runtime_us=400:work_us=50"]))
    over = _case(run_agent(agent, ["JIT-DL:cycles=300:runtime_us=100:work_us=400"]))
    for c in (plain, over):
        lat, resp = c.find("latency"), c.find("response")
        assert lat is not None and resp is not None and lat.n == resp.n > 0
        assert resp.kind == "duration"
        assert resp.samples is not None and lat.samples is not None
        assert (resp.samples >= lat.samples).all()  # a job ends after it woke
    assert over.outcome == "failed"
    check = next(ch for ch in over.checks if ch.name == "deadlines")
    assert check.verdict == "fail" and "runtime 100 us, work 400 us" in check.detail
    assert _misses(over) >= 0.3 and _misses(over) > _misses(plain)


def test_without_privilege_it_is_skipped(run_agent: Runner, agent: Path) -> None:
    # Root runs it as nobody; any other user already lacks the privilege.
    if os.geteuid() == 0:
        with public_copy(agent) as exe:
            r = run_agent(exe, ["JIT-DL:cycles=10"], preexec=drop_privileges)
    else:
        r = run_agent(agent, ["JIT-DL:cycles=10"])
    c = _case(r)
    assert c.outcome == "skipped" and "sched_setattr" in c.reason


def test_impossible_parameters_are_an_error(run_agent: Runner, agent: Path) -> None:
    c = _case(run_agent(agent, ["JIT-DL:cycles=10:runtime_us=2000:period_us=1000"]))
    assert c.outcome == "error"
