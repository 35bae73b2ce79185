"""End-to-end: NOISE-OS with `rtbench run --trace` on this machine (root and
a kernel with tracefs; skipped otherwise). The case's self-test is a
SCHED_FIFO thread `noise-blocker`, one priority above the poller on the
measured CPU, that holds it HOLD µs COUNT times: each hold must be a gap at
least that long, and the kernel trace must name each such gap after that
thread, stored with the run. No other timing is asserted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import rtbench

from rtbench.store import Store
from rtbench.trace.noise import CODE
from rtbench.trace.tracefs import kernel_has_tracefs, toplevel_lock

pytestmark = [
    pytest.mark.root("the kernel-trace mode writes tracefs"),
    pytest.mark.skipif(not kernel_has_tracefs(), reason="needs a kernel with tracefs"),
    pytest.mark.realtime,
]

HOLD_US, COUNT = 20_000, 3
_LINE = re.compile(r"^\s+([\d.]+) µs at\s+[\d.]+ ms on CPU (\d+): (.*)$")


def test_the_blockers_gaps_are_named_after_it(db: Path, agent: Path) -> None:
    with toplevel_lock(shared=True):
        r = rtbench(
            "run", "--trace", "-c", "NOISE-OS",
            "--set", "NOISE-OS.duration_ms=600",
            "--set", f"NOISE-OS.blocker_us={HOLD_US}",
            "--set", f"NOISE-OS.blocker_count={COUNT}",
        )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    with Store(db) as store:
        c = store.load(1).case("NOISE-OS")
    assert c is not None and c.outcome == "passed", c
    [w] = [w for w in c.warnings if w.code == CODE]
    lines = [m for m in map(_LINE.match, w.detail.split("\n")[1:]) if m]
    assert lines, w.detail
    # Every hold is a gap at least as long, named after the blocker: as
    # its source, or, where a stall of the vCPU on a loaded host took the
    # larger part of that gap, as its largest traced part. The machine's own
    # long gaps are not counted.
    named = [m for m in lines if float(m[1]) >= HOLD_US and "thread noise-blocker (pid " in m[3]]
    assert len(named) == COUNT, w.detail
    assert all("real-time priority" in m[3] for m in named)
