"""The agent measures where the process may run: under taskset (or a
cpuset) its default CPU comes from sched_getaffinity, the hello record says
which CPUs it may use, and a case that needs two CPUs is skipped with the
reason when it has one, not failed nor pinned where it was kept off."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import cast

import pytest

from rtbench.model import CaseResult, Run
from rtbench.stream import assemble, parse_lines

CASES = ["CAL-TIMER:reads=1000:rounds=100", "MQ-LAT:cross_cpu=1:iterations=100:size=16"]

pytestmark = pytest.mark.skipif(shutil.which("taskset") is None, reason="no taskset (util-linux)")
# The CPUs this process may use (the suite may itself run under taskset or
# in a cpuset), not the machine's: a mask is only narrowed from these.
ALLOWED = sorted(os.sched_getaffinity(0))
FIRST = ALLOWED[0]


def _run(
    agent: Path, cpus: str | None, args: list[str]
) -> tuple[subprocess.CompletedProcess[bytes], Run]:
    cmd = ([shutil.which("taskset") or "taskset", "-c", cpus] if cpus else []) + [str(agent), *args]
    p = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    parsed = parse_lines(p.stdout.splitlines())
    return p, assemble(parsed.records, parsed.issues, parsed.log)


def _begin_cpu(p: subprocess.CompletedProcess[bytes]) -> set[int]:
    parsed = parse_lines(p.stdout.splitlines())
    return {r.body["params"]["cpu"] for r in parsed.records if r.kind == "begin"}


def test_one_allowed_cpu_is_the_one_measured_and_two_cpu_cases_skip(agent: Path) -> None:
    p, run = _run(agent, str(FIRST), CASES)
    assert run.complete, p.stderr
    assert run.hello["cpu"]["allowed"] == str(FIRST)
    assert _begin_cpu(p) == {FIRST}
    cal, mq = run.case("CAL-TIMER"), run.case("MQ-LAT")
    assert cal is not None and mq is not None
    assert cal.outcome == "passed"  # its other checks stand
    assert mq.outcome == "skipped" and "needs 2 CPUs" in mq.reason and f"CPU {FIRST}" in mq.reason
    skipped = {c.name: c.verdict for c in cal.checks}
    assert skipped["cross_cpu"] == "skip"


@pytest.mark.skipif(
    len(ALLOWED) < 2, reason=f"one CPU allowed ({FIRST}): no narrower mask to choose"
)
def test_the_default_cpu_follows_the_mask_not_the_machine(agent: Path) -> None:
    last = ALLOWED[-1]
    # negative control: the whole machine, two CPUs, nothing skipped
    p, run = _run(agent, None, CASES)
    assert _begin_cpu(p) == {last}
    assert cast(CaseResult, run.case("MQ-LAT")).outcome == "passed"
    p, run = _run(agent, str(FIRST), CASES[:1])
    assert _begin_cpu(p) == {FIRST} and run.hello["cpu"]["allowed"] == str(FIRST)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: no CPU outside the mask")
def test_a_cpu_outside_the_mask_is_a_clear_error(agent: Path) -> None:
    outside = next(c for c in range(os.cpu_count() or 1) if c != FIRST)
    p, _ = _run(agent, str(FIRST), ["--cpu", str(outside), CASES[0]])
    assert p.returncode == 2
    assert f"cpu {outside}".encode() in p.stderr and b"affinity" in p.stderr
